/*
 * "${VAR}" expansion for configuration values, so secrets and per-host values stay out of
 * the file (password: ${GWSYNC_ADMIN_PASSWORD}). Only the braced form is recognised, which
 * keeps a lone '$' in a value (a password such as "pa$word") literal:
 *   ${NAME}           the variable's value; an unset variable is an error naming it
 *   ${NAME:-default}  the value if set and non-empty, else `default` (literal text; it
 *                     cannot contain '}' or another "${")
 *   $$                a literal '$' (so "$${X}" is the text "${X}")
 * NAME is [A-Za-z_][A-Za-z0-9_]*. Error messages name the variable but never quote the
 * surrounding text or a default, which may be secret.
 */
#ifndef GW_ENVEXPAND_H
#define GW_ENVEXPAND_H

#include "core/error.h"

/* Looks a name up; returns NULL if unset. getenv() fits (env_expand uses it if NULL). */
typedef const char *(*env_lookup_fn)(const char *name, void *ctx);

/*
 * Expand `in` into a new malloc'd string *out (the caller frees it). Returns 0, or -1 with
 * err->msg such as "environment variable 'FOO' is not set" (*out untouched).
 */
int env_expand(const char *in, char **out, env_lookup_fn lookup, void *ctx, struct gw_err *err);

/* 1 if `in` contains a '$' that env_expand would act on (cheap pre-check). */
int env_has_refs(const char *in);

#endif
