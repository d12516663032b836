/*
 * Line-oriented logging. Each line is formatted in full and written with one write(2)
 * under a mutex, so lines from the pollers and the dispatcher never interleave. Level
 * checks are lock-free (an atomic) so a disabled debug line costs one load.
 *
 * The line buffer (8 KiB) belongs to the log and is used under its mutex, not on the
 * caller's stack: every thread logs, and a stack page a thread has touched once stays
 * dirty for its whole life (issue 30 item 9: the idle agent's private memory). The
 * message is still formatted on the caller's stack, before the lock, so threads logging at
 * once do not wait for each other's formatting.
 */
#include "core/log.h"

#include "core/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_SECRETS 8
#define MAX_PINNED  4

struct gw_log {
	atomic_int level;
	enum gw_log_format format;
	char *path;
	int fd;
	pthread_mutex_t mu;
	char *secrets[MAX_SECRETS];
	int next_secret;
	char *pinned[MAX_PINNED]; /* configured secrets: the password, the sync and status tokens */
	char line[8192];          /* under mu: the line being written */
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *gw_log_level_name(enum gw_log_level level)
{
	return (unsigned)level < 4 ? level_names[level] : "?";
}

int gw_log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

/* Never blocking: a FIFO with no reader (which a plain open() would wait for, for ever,
 * at start-up or on SIGHUP) is refused with ENXIO; the descriptor is made blocking again
 * for the writes, so a slow reader slows logging down rather than losing lines. */
static int open_file(const char *path, struct gw_err *err)
{
	int fd =
	    open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0640);
	if (fd < 0)
		return gw_errf(err, "log file %s: %s%s", path, strerror(errno),
		               errno == ENXIO ? " (a FIFO with no reader)" : ""),
		       -1;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int gw_log_open(struct gw_log **out, enum gw_log_level level, enum gw_log_format format,
                const char *path, struct gw_err *err)
{
	struct gw_log *log = calloc(1, sizeof *log);
	if (!log)
		return gw_errf(err, "out of memory");
	atomic_init(&log->level, level);
	log->format = format;
	log->fd = STDERR_FILENO;
	if (path) {
		log->path = strdup(path);
		log->fd = log->path ? open_file(path, err) : -1;
		if (log->fd < 0) {
			free(log->path);
			free(log);
			return -1;
		}
	}
	pthread_mutex_init(&log->mu, NULL);
	*out = log;
	return 0;
}

void gw_log_close(struct gw_log *log)
{
	if (!log)
		return;
	if (log->path && log->fd >= 0)
		close(log->fd);
	for (int i = 0; i < MAX_SECRETS; i++)
		free(log->secrets[i]);
	for (int i = 0; i < MAX_PINNED; i++)
		free(log->pinned[i]);
	pthread_mutex_destroy(&log->mu);
	free(log->path);
	free(log);
}

enum gw_log_level gw_log_level(const struct gw_log *log)
{
	return atomic_load(&log->level);
}

int gw_log_enabled(const struct gw_log *log, enum gw_log_level level)
{
	return log && (int)level <= atomic_load(&log->level);
}

int gw_log_reopen(struct gw_log *log, struct gw_err *err)
{
	if (!log->path)
		return 0;
	int fd = open_file(log->path, err);
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&log->mu);
	int old = log->fd;
	log->fd = fd;
	pthread_mutex_unlock(&log->mu);
	close(old);
	return 0;
}

void gw_log_secret(struct gw_log *log, const char *secret)
{
	if (!log || !secret || strlen(secret) < 4)
		return;
	pthread_mutex_lock(&log->mu);
	for (int i = 0; i < MAX_SECRETS; i++)
		if (log->secrets[i] && strcmp(log->secrets[i], secret) == 0)
			goto out;
	free(log->secrets[log->next_secret]);
	log->secrets[log->next_secret] = strdup(secret);
	log->next_secret = (log->next_secret + 1) % MAX_SECRETS;
out:
	pthread_mutex_unlock(&log->mu);
}

void gw_log_secret_pin(struct gw_log *log, const char *secret)
{
	if (!log || !secret || strlen(secret) < 4)
		return;
	pthread_mutex_lock(&log->mu);
	int i = 0;
	while (i < MAX_PINNED - 1 && log->pinned[i] && strcmp(log->pinned[i], secret) != 0)
		i++;
	free(log->pinned[i]); /* the same secret again, or the last slot when all are taken */
	log->pinned[i] = strdup(secret);
	pthread_mutex_unlock(&log->mu);
}

static void mask_one(char *msg, const char *s)
{
	if (!s)
		return;
	size_t n = strlen(s);
	for (char *p = strstr(msg, s); p; p = strstr(p + n, s))
		memset(p, '*', n);
}

/* Called with the mutex held. */
static void mask_secrets(struct gw_log *log, char *msg)
{
	for (int i = 0; i < MAX_PINNED; i++)
		mask_one(msg, log->pinned[i]);
	for (int i = 0; i < MAX_SECRETS; i++)
		mask_one(msg, log->secrets[i]);
}

/* End buf (cap bytes, holding at least cap - 1 bytes of a longer text) with the mark of a
 * cut, never through a character. Returns the length. */
static size_t mark_cut(char *buf, size_t cap)
{
	size_t keep = cap - sizeof GW_LOG_CUT; /* room for the mark and the NUL */
	while (keep > 0 && ((unsigned char)buf[keep] & 0xC0) == 0x80)
		keep--; /* buf[keep] continues a character: cut before it starts */
	memcpy(buf + keep, GW_LOG_CUT, sizeof GW_LOG_CUT);
	return keep + sizeof GW_LOG_CUT - 1;
}

size_t gw_log_fit(char *buf, size_t cap, const char *text)
{
	size_t n = strlen(text);
	if (n < cap) {
		memmove(buf, text, n + 1);
		return n;
	}
	memmove(buf, text, cap - 1);
	return mark_cut(buf, cap);
}

/* Appends `s` as JSON string content (without quotes) to buf at *pos. 0, or -1 when it
 * stopped before the end of `s` for want of room. */
static int json_escape(char *buf, size_t cap, size_t *pos, const char *s)
{
	for (; *s && *pos + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[(*pos)++] = '\\';
			buf[(*pos)++] = (char)c;
		} else if (c < 0x20) {
			*pos += (size_t)snprintf(buf + *pos, cap - *pos, "\\u%04x", c);
		} else {
			buf[(*pos)++] = (char)c;
		}
	}
	return *s ? -1 : 0;
}

/* Appends `s` to buf at *pos for the text format, stopping before `cap`: one line, always.
 * Text from outside (an admin's error message, item keys and names, paths, server names)
 * must not be able to start a line of its own, forge one ("...\n... info store: accepted
 * ..."), rewrite the terminal or split a line for a reader, so:
 *   \n \r \t                  stay visible as those two characters;
 *   other C0 controls, DEL     \xHH (ESC is \x1b);
 *   C1 controls, U+2028/2029   \u0085, \u2028 (some terminals and viewers act on them);
 *   a byte that is not UTF-8   \xHH (the line stays valid UTF-8, the byte stays known).
 * A backslash itself is kept: escaping it would double every backslash of ordinary text,
 * and a line stays one line either way. An escape is never cut in half at the end.
 * 0, or -1 when it stopped before the end of `s` for want of room. */
static int text_escape(char *buf, size_t cap, size_t *pos, const char *s)
{
	while (*s) {
		unsigned cp;
		size_t n = utf8_char(s, &cp);
		char esc[8];
		const char *out = s;
		size_t len = n;
		if (n == 0 || cp < 0x20 || cp == 0x7f) {
			unsigned char c = (unsigned char)*s;
			if (c == '\n')
				memcpy(esc, "\\n", 3), len = 2;
			else if (c == '\r')
				memcpy(esc, "\\r", 3), len = 2;
			else if (c == '\t')
				memcpy(esc, "\\t", 3), len = 2;
			else
				len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
			out = esc;
			n = 1;
		} else if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029) {
			len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp);
			out = esc;
		}
		if (*pos + len >= cap)
			return -1;
		memcpy(buf + *pos, out, len);
		*pos += len;
		s += n;
	}
	return 0;
}

void gw_vlogf(struct gw_log *log, enum gw_log_level level, const char *component, const char *fmt,
              va_list ap)
{
	if (!gw_log_enabled(log, level))
		return;
	char msg[GW_LOG_MSG_MAX + 1], ts[64];
	/* A longer message is formatted whole first, so its secrets are masked before it is
	 * cut (a cut through a secret would leave its first half in the line). */
	va_list whole;
	va_copy(whole, ap);
	int len = vsnprintf(msg, sizeof msg, fmt, ap);
	char *full = len >= (int)sizeof msg ? malloc((size_t)len + 1) : NULL;
	if (full)
		vsnprintf(full, (size_t)len + 1, fmt, whole);
	va_end(whole);
	if (len >= (int)sizeof msg && !full)
		mark_cut(msg, sizeof msg); /* out of memory: cut what we have */

	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof ts - n, ".%03dZ", (int)(tv.tv_usec / 1000));

	pthread_mutex_lock(&log->mu);
	char *line = log->line;
	const size_t line_cap = sizeof log->line;
	if (full) {
		mask_secrets(log, full);
		gw_log_fit(msg, sizeof msg, full);
		free(full);
	} else {
		mask_secrets(log, msg);
	}
	size_t pos = 0;
	const size_t cut = sizeof GW_LOG_CUT - 1;
	if (log->format == GW_LOG_JSON) {
		utf8_scrub(msg); /* one line must stay one valid JSON document */
		pos = (size_t)snprintf(line, line_cap,
		                       "{\"time\":\"%s\",\"level\":\"%s\",\"component\":\"", ts,
		                       gw_log_level_name(level));
		json_escape(line, line_cap, &pos, component ? component : "");
		pos += (size_t)snprintf(line + pos, line_cap - pos, "\",\"msg\":\"");
		if (json_escape(line, line_cap - cut - 4, &pos, msg) < 0) {
			memcpy(line + pos, GW_LOG_CUT, cut);
			pos += cut;
		}
		pos += (size_t)snprintf(line + pos, line_cap - pos, "\"}\n");
	} else {
		pos = (size_t)snprintf(line, line_cap, "%s %-5s ", ts, gw_log_level_name(level));
		text_escape(line, line_cap - 1, &pos, component ? component : "-");
		if (pos + 2 < line_cap - 1) {
			memcpy(line + pos, ": ", 2);
			pos += 2;
		}
		if (text_escape(line, line_cap - 1 - cut, &pos, msg) < 0) {
			memcpy(line + pos, GW_LOG_CUT, cut);
			pos += cut;
		}
		line[pos++] = '\n';
	}
	if (pos >= line_cap) {
		pos = line_cap - 1;
		line[pos - 1] = '\n';
	}
	for (size_t off = 0; off < pos;) {
		ssize_t w = write(log->fd, line + off, pos - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	pthread_mutex_unlock(&log->mu);
}

void gw_logf(struct gw_log *log, enum gw_log_level level, const char *component, const char *fmt,
             ...)
{
	va_list ap;
	va_start(ap, fmt);
	gw_vlogf(log, level, component, fmt, ap);
	va_end(ap);
}
