/*
 * The fast path of a full configs reply (ConfigController's {"appId", ..., "configurations":
 * {key: value}, "releaseKey"}), for the common case of a namespace that barely changed: the
 * reply is walked once as text (core/jspan.h for its structure, core/jlex.h for every string
 * exactly as jansson checks it) and each value is compared with the held map where it
 * stands, so nothing is built for the keys that did not change. A 100,000-rule release is
 * about 70 MB: parsing it into a tree for every one-rule release cost the source ~1 s of
 * CPU, nearly all of it in the parser (perf); the walk costs a fraction of it.
 *
 * It decides nothing on its own about a reply it does not like: anything it does not take
 * (another member holding an object or array, configurationChanges, a value that is not a
 * string, a key twice, anything malformed) is left to reply.c's parser, which then accepts
 * or refuses it with its own message. What it takes, it takes whole: the reply is checked
 * to the end before the first key is handed on, so a bad reply still changes nothing.
 */
#ifndef GW_APOLLO_SCAN_H
#define GW_APOLLO_SCAN_H

#include <jansson.h>
#include <stddef.h>

#include "source/apollo/diff.h"

/*
 * Compare a full reply with `held` (key -> string), and when it is one the walk takes:
 * call fn for every key whose value differs (value NULL: gone), make held the new release
 * in place, set *release_key (caller frees) and *changed, and return 1. 0: not taken,
 * nothing called or changed (parse it with reply.c). -1: fn stopped or memory ran out part
 * way (held is then part way: read everything again).
 */
int apollo_scan_release(const char *body, size_t len, json_t *held, apollo_diff_fn fn, void *ctx,
                        char **release_key, long *changed);

#endif
