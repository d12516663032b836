/*
 * Run a shell command (check_command, reload_command) with a time limit, the way an
 * operator would expect from confd or consul-template: `/bin/sh -c COMMAND`, extra
 * GWSYNC_* variables in its environment, its output captured for the log, and on timeout
 * its whole process group killed, so a stuck `nginx -t` and whatever it started cannot
 * outlive the limit.
 */
#ifndef GWFILE_COMMAND_H
#define GWFILE_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#define COMMAND_OUTPUT_MAX 4096

struct command_result {
	int ok;                          /* exited with status 0 */
	char summary[160];               /* "exited with status 1", "timed out after 30000 ms"... */
	char output[COMMAND_OUTPUT_MAX]; /* stdout and stderr, the first bytes, NUL-terminated */
	size_t output_len;
	int truncated; /* more output than fits was discarded */
};

/*
 * Run `command` through /bin/sh -c with the agent's environment plus `extra` ("NAME=value"
 * strings, NULL-terminated; they replace same-named variables). Standard input is
 * /dev/null. Returns 0 if it exited with status 0, -1 otherwise; r says what happened.
 */
int command_run(const char *command, const char *const *extra, int64_t timeout_ms,
                struct command_result *r);

/* The last non-empty line of r->output (at most `cap` - 1 bytes), for error messages. */
void command_last_line(const struct command_result *r, char *buf, size_t cap);

#endif
