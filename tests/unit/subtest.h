/*
 * Helpers shared by the subscriber tests (loader, dispatcher, file plugin): group versions
 * built by hand (so these tests do not depend on the JSON model), a configuration with
 * subscribers built by hand (so they do not depend on a complete gwsync.yaml), and the
 * file utilities of testfiles.h for reading what the test plugins wrote.
 */
#ifndef GW_SUBTEST_H
#define GW_SUBTEST_H

#include <stddef.h>
#include <stdint.h>

/* agent/config/config.h (struct cfg) comes through deliver/subscribers.h. */
#include "model/groupdata.h"
#include "core/log.h"
#include "deliver/subscribers.h"
#include "testfiles.h"

/*
 * A group version from (key, raw JSON) pairs ending with NULL, in that (admin) order (the
 * JSON need not hold the key; an item's name is its JSON's, as always). received_us is
 * now.
 */
struct group_data *gd_make(enum gw_group g, const char *md5, int64_t lmt, const char *const *kv);

/* Deliver from..to of group g to s as the dispatcher does (the delta, the ABI's change
 * with or without lists, typed views for a subscriber that reads them): apply()'s
 * verdict, `why` set on rejection. */
int sub_apply(struct subscriber *s, enum gw_group g, struct group_data *from, struct group_data *to,
              struct gw_err *why);

#define TCFG_MAX 8

struct tcfg {
	struct cfg cfg;
	struct cfg_subscriber subs[TCFG_MAX];
	struct ynode *trees[TCFG_MAX];
};

/* Groups: the five classic ones. No subscribers yet. */
void tcfg_init(struct tcfg *t);
/* Add a subscriber whose `config:` map is the YAML text `yaml` ("" for none). */
void tcfg_add(struct tcfg *t, const char *name, const char *library, const char *yaml);
void tcfg_free(struct tcfg *t);

/* A quiet log (warnings and errors on stderr), or everything into `path`. */
struct gw_log *test_log(const char *path);

#endif
