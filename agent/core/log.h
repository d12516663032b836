/*
 * The agent's log: one line per event on stderr (or a file), "TIME LEVEL component:
 * message", or one JSON object per line. A struct gw_log is created by main and passed
 * down in context structs; there is no global logger. Secrets registered with
 * gw_log_secret() are masked in every line as a second line of defence: the first is
 * never formatting them into a message at all.
 */
#ifndef GW_LOG_H
#define GW_LOG_H

#include <gwsync/log_level.h> /* the plugin ABI's levels, not the whole ABI */
#include <stdarg.h>

#include "core/error.h"

enum gw_log_format { GW_LOG_TEXT = 0, GW_LOG_JSON };

struct gw_log;

/* path NULL: stderr. */
int gw_log_open(struct gw_log **out, enum gw_log_level level, enum gw_log_format format,
                const char *path, struct gw_err *err);
void gw_log_close(struct gw_log *log);

enum gw_log_level gw_log_level(const struct gw_log *log);
int gw_log_enabled(const struct gw_log *log, enum gw_log_level level);

/* Reopen the log file (SIGHUP, after logrotate moved it). No-op on stderr. */
int gw_log_reopen(struct gw_log *log, struct gw_err *err);

/* Mask every later occurrence of `secret` (>= 4 bytes) in log lines. Thread-safe. The
 * last few are kept (tokens rotate); a pinned secret (the password) is kept for good. */
void gw_log_secret(struct gw_log *log, const char *secret);
/* The same for a configured secret, kept for good (up to 4: the password, the WebSocket
 * sync token, the status token). */
void gw_log_secret_pin(struct gw_log *log, const char *secret);

/* A message longer than GW_LOG_MSG_MAX bytes (after formatting) is cut at a character
 * boundary and ends with GW_LOG_CUT, and so is a line whose escaped form outgrows the line
 * buffer (8 KiB): a cut is never silent. Plugins' host->log() lines are cut the same way. */
#define GW_LOG_MSG_MAX 4095
#define GW_LOG_CUT     " ... [truncated]"

/* Copy `text` into buf (cap bytes, cap > sizeof GW_LOG_CUT), cut as above if it does not
 * fit. Returns the length written. */
size_t gw_log_fit(char *buf, size_t cap, const char *text);

void gw_logf(struct gw_log *log, enum gw_log_level level, const char *component, const char *fmt,
             ...) __attribute__((format(printf, 4, 5)));
void gw_vlogf(struct gw_log *log, enum gw_log_level level, const char *component, const char *fmt,
              va_list ap);

/* "error" | "warn" | "info" | "debug" -> level; -1 if unknown. */
int gw_log_level_parse(const char *s);
const char *gw_log_level_name(enum gw_log_level level);

#define LOG_E(log, comp, ...) gw_logf((log), GW_LOG_ERROR, (comp), __VA_ARGS__)
#define LOG_W(log, comp, ...) gw_logf((log), GW_LOG_WARN, (comp), __VA_ARGS__)
#define LOG_I(log, comp, ...) gw_logf((log), GW_LOG_INFO, (comp), __VA_ARGS__)
#define LOG_D(log, comp, ...)                                                                      \
	do {                                                                                       \
		if (gw_log_enabled((log), GW_LOG_DEBUG))                                           \
			gw_logf((log), GW_LOG_DEBUG, (comp), __VA_ARGS__);                         \
	} while (0)

#endif
