/*
 * File helpers of the unit tests (temporary directories, reading back what a plugin wrote,
 * waiting for lines): they need nothing of the agent, so the tests that drive plugins
 * through the test kit alone (gwsync/testing.h) use them too.
 */
#ifndef GW_TESTFILES_H
#define GW_TESTFILES_H

#include <stddef.h>
#include <stdint.h>

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
