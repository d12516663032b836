/*
 * Helpers shared by the subscriber tests (loader, dispatcher, file plugin): group versions
 * built by hand (so these tests do not depend on the JSON model), a configuration with
 * subscribers built by hand (so they do not depend on a complete gwsync.yaml), and small
 * file utilities for reading what the test plugins wrote.
 */
#ifndef GW_SUBTEST_H
#define GW_SUBTEST_H

#include <stddef.h>
#include <stdint.h>

/* agent/config/config.h (struct cfg) comes through deliver/subscribers.h. */
#include "model/groupdata.h"
#include "core/log.h"
#include "deliver/subscribers.h"

/*
 * A group version from (key, raw JSON) pairs ending with NULL, in that (admin) order.
 * Each item's name is "n-KEY". received_us is now.
 */
struct group_data *gd_make(enum gw_group g, const char *md5, int64_t lmt, const char *const *kv);

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

/* A fresh directory under $TMPDIR or /tmp; free() the result. rm_rf() removes it. */
char *test_tmpdir(void);
void rm_rf(const char *path);

/* A file's whole content (NUL-terminated; *len if non-NULL), or NULL if it cannot be read. */
char *slurp(const char *path, size_t *len);

/* Lines of `path` starting with `prefix` (0 if the file is missing). */
int count_lines(const char *path, const char *prefix);

/* 1 if some line of `path` equals `line` exactly. */
int has_line(const char *path, const char *line);

/* The n-th (0-based) line starting with `prefix`, or NULL; free() it. */
char *nth_line(const char *path, const char *prefix, int n);

/* Poll (every 10 ms, up to `timeout_ms`) until `path` has >= `want` lines with `prefix`. */
int wait_lines(const char *path, const char *prefix, int want, int64_t timeout_ms);

/* Poll until `path` has the line `line`; 1 if it appeared within `timeout_ms`. */
int wait_has_line(const char *path, const char *line, int64_t timeout_ms);

void sleep_ms(int64_t ms);

/* The path of a plugin built in this tree: GWSYNC_BUILDDIR/REL (e.g.
 * docs/example/.libs/counter.so). */
char *build_path(const char *rel);

#endif
