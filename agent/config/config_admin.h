/*
 * Loaders of the keys every source section shares (config_admin.c; first written for
 * admin:, hence the cfga_ prefix): the groups, the credentials, the secrets read from
 * files, the TLS files, and the status token. A source's section (source/admin/config.c,
 * source/kv/config.c, ...) lists them in its table. They follow the conventions of
 * config_walk.h.
 */
#ifndef GW_CONFIG_ADMIN_H
#define GW_CONFIG_ADMIN_H

#include "config/config_walk.h"

int cfga_groups(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base);
int cfga_username(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base);
int cfga_password(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base);
int cfga_password_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);
int cfga_status_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base);
int cfga_status_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base);
int cfga_readable_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);

/* A secret read whole from `file` (a regular file only: core/readfile.h), one trailing
 * "\n" dropped, never quoted in a message: password_file and the like. */
int cfga_read_secret_file(struct loader *ld, const struct ynode *at, const char *path,
                          const char *file, char **out);

/* The groups when none are configured: the five every gateway needs. */
void cfga_default_groups(struct cfg *c);

#endif
