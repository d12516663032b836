/*
 * The shell of a source that runs on one thread over the mirror (etcd, Consul; Nacos, Apollo
 * and Polaris through node/): the parts of the source table (source.h) that were the same in
 * each, written once. Starting the one thread (once), stop() (the flag, what blocks
 * interrupted, the pause woken), free() (stop, join, free), status() (the connection's
 * status with the mirror's counts), the start-up sync that tries each server in order ("no
 * Consul server answered (2 tried); the last: ..."), and for the thread its pause, the
 * "still starting" test of the retry schedule and a failed try of the server rotation
 * (rounds.h). What is a source's own (its thread, what to interrupt and free, its read, what
 * a pause does) it hands in as a small ops table; the shell holds no policy of its own. In
 * kv/, beside the mirror whose counts status() reports: a part beside source.h may include
 * no folder (tests/build/test_include_rules.py).
 *
 * A source's `struct source` begins with its `struct kv_shell` (first member, checked by a
 * static assertion in each source.c), so that the shell's functions are the table's own
 * entries (kv_shell_start, kv_shell_stop...): a pointer to a struct converts to a pointer to
 * its first member and back (C11 6.7.2.1), and no source needs a wrapper of its own. The
 * table's entries that take the configuration alone (selects, conns, conn_name, summary)
 * cannot know which type they answer for, so each type has functions of its own: the
 * macros at the end write them, the same in every source but for their names.
 *
 * Threads: the source's thread and main's run the source; stop() and status() may come
 * from any thread, and touch only `stop` (atomic), `status` (conn.h, under its lock) and
 * what the source's interrupt() and counts() make safe from any thread (kv_shell_ops).
 */
#ifndef GW_KV_SHELL_H
#define GW_KV_SHELL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "source/conn.h"
#include "source/kv/mirror.h"
#include "source/rounds.h"
#include "source/source.h"

/* What a one-thread source hands the shell; static, it outlives the source. */
struct kv_shell_ops {
	const char *type;   /* "consul": the component of log lines, the prefix of errors */
	const char *thread; /* the thread's name, "consul-0" */
	/* what a server is called in the start-up sync's error: "Consul server" */
	const char *server_noun;
	void *(*run)(void *source); /* the thread, given the struct source */
	/* stop(), after the flag is set and before the pause is woken: interrupt whatever may
	 * block the thread (HTTP handles, a watch) at once. Any thread; NULL: nothing. */
	void (*interrupt)(struct source *s);
	/* free(), once the thread is joined: free what is the source's own, neither the
	 * status nor the struct itself (the shell's). NULL: nothing. */
	void (*release)(struct source *s);
	/* status(): the mirror's counts; *watches may be set (it is left at -1 to keep what
	 * the status holds). Any thread. */
	void (*counts)(struct source *s, struct kv_mirror_stats *ms, int64_t *watches);
	/* The start-up sync's full read from server i. 0 (the source notes the server in use
	 * and whatever follows a read that worked), or -1 with err. */
	int (*first_read)(struct source *s, size_t i, struct gw_err *err);
	/* After a failed first_read, before the next (NULL: nothing; Apollo moves its client
	 * to the next config service). */
	void (*next)(struct source *s);
	/* What a pause (kv_shell_pause) does meanwhile: build the mirror's groups due at `now`;
	 * returns the next deadline (-1: none). NULL: nothing. */
	int64_t (*due)(struct source *s, int64_t now);
	/* How a pause sleeps, at most ms, when the thread sleeps on a watch of its own (etcd's
	 * stream, Polaris's held watch) that interrupt() wakes. NULL: on the status's wake. */
	void (*wait)(struct source *s, int64_t ms);
};

struct kv_shell {
	const struct kv_shell_ops *ops;
	struct source_args args; /* what open() was given (source.h) */
	size_t n_servers;        /* the start-up sync tries this many (kv_shell_initial_sync) */
	atomic_int stop;
	pthread_t thread;
	int started;
	struct conn status; /* the connection's status, and the pause stop() ends (conn.h) */
};

/* open()'s start: a zeroed struct source of `size` bytes (sizeof, its shell first), the shell
 * filled: stop unset, the status "connecting" with `server` (the connection's name) and
 * `session` (NULL: ""), no thread yet. kv_shell_free() frees it. NULL with err when out of
 * memory ("TYPE: out of memory"). */
struct source *kv_shell_new(size_t size, const struct kv_shell_ops *ops,
                            const struct source_args *args, const char *server, const char *session,
                            size_t n_servers, struct gw_err *err);

/* The start-up sync over servers 0 .. n - 1 in turn: the first whose first_read works ends
 * it (0); each failure is counted in the status and logged. -1 with err when stop() came
 * ("start-up sync interrupted") or none answered ("no SERVER_NOUN answered (n tried); the
 * last: ..."). */
int kv_shell_first_sync(struct kv_shell *sh, size_t n, struct gw_err *err);

/* Some configured group has no version yet (neither from the server nor the snapshot): the
 * retry schedule's backoff is then capped (retry_next_starting). */
int kv_shell_starting(const struct kv_shell *sh);
/* The configured groups, "PLUGIN,SELECTOR", for a failure's log line. */
void kv_shell_groups(const struct kv_shell *sh, char *buf, size_t cap);
/* The thread's pause: ms, doing what is due meanwhile (ops->due), unless stop() comes first
 * (1). */
int kv_shell_pause(struct kv_shell *sh, int64_t ms);
/* A failed try of a thread that rotates over its servers (rounds.h; why and msg already
 * counted in the status): *ep moves to the next server, tried at once (0) or after the
 * schedule's pause (kv_shell_pause); 1 if stop() came during it. */
int kv_shell_try_failed(struct kv_shell *sh, struct rounds *r, size_t *ep, enum sync_fail why,
                        const char *msg);

/* The table's entries (source.h), for a struct source that begins with its shell. */
int kv_shell_initial_sync(struct source *s, struct gw_err *err); /* over n_servers */
int kv_shell_start(struct source *s, struct gw_err *err);
void kv_shell_stop(struct source *s);
void kv_shell_free(struct source *s);
int kv_shell_status(struct source *s, size_t i, struct source_conn_status *out);

/* The configuration-only entries, for their macros below. */
int kv_shell_selects(const struct cfg *cfg, const char *section); /* cfg's section is it */
const char *kv_shell_conn_name(const char *label, size_t i);      /* the label, "" past 0 */
/* "TYPE source LABEL" ("consul source consul://h:8500/shenyu"), as kv_config_summary. */
void kv_shell_summary(const char *type, const char *label, char *buf, size_t cap);

/* TYPE_label, TYPE_selects, TYPE_conns and TYPE_conn_name for the table of a source TYPE
 * whose section is named TYPE and declared by SECTION (its struct cfg_section), with
 * settings of type SETTINGS whose member LABEL names the one connection: one connection
 * while the section is loaded, named by its label (TYPE_label: NULL without the section). */
#define KV_SHELL_CONFIG_ENTRIES(type, section, settings, label)                                    \
	static const char *type##_label(const struct cfg *cfg)                                     \
	{                                                                                          \
		const settings *set = cfg_settings(cfg, (section));                                \
		return set ? set->label : NULL;                                                    \
	}                                                                                          \
	static int type##_selects(const struct cfg *cfg)                                           \
	{                                                                                          \
		return kv_shell_selects(cfg, #type);                                               \
	}                                                                                          \
	static size_t type##_conns(const struct cfg *cfg)                                          \
	{                                                                                          \
		return cfg_settings(cfg, (section)) ? 1 : 0;                                       \
	}                                                                                          \
	static const char *type##_conn_name(const struct cfg *cfg, size_t i)                       \
	{                                                                                          \
		return kv_shell_conn_name(type##_label(cfg), i);                                   \
	}
/* TYPE_summary, "TYPE source LABEL", for a source whose summary is its label (after
 * KV_SHELL_CONFIG_ENTRIES). */
#define KV_SHELL_SUMMARY_ENTRY(type)                                                               \
	static void type##_summary(const struct cfg *cfg, char *buf, size_t cap)                   \
	{                                                                                          \
		kv_shell_summary(#type, type##_label(cfg), buf, cap);                              \
	}

#endif
