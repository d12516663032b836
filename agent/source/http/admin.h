/*
 * One admin server, spoken to as PROTOCOL.md describes: the listener (long poll), the
 * fetch of named groups, and login where configured, over one keep-alive connection
 * (http.h). Every call judges the reply by HTTP status and by the body's code, and says
 * why it failed in err->kind (an enum sync_fail, failure.h) so the poller can count
 * reasons; err is never NULL.
 *
 * The request builders and the listener-reply parser are pure functions, unit-tested
 * without a server.
 */
#ifndef GW_ADMIN_H
#define GW_ADMIN_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/failure.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "store/ingest.h"

/*
 * What the listener sends for a group we hold nothing for. The admin splits "md5,time"
 * with commons-lang StringUtils.split, which drops empty tokens, so an empty md5 would
 * arrive as one token and be refused ("group param invalid"). Any non-empty text that is
 * never a real md5 makes the admin answer at once that the group changed, so the poller
 * fetches it: that is how a daemon that started without data catches up.
 */
#define ADMIN_NO_MD5 "0"

/* Replies at least this large are followed by malloc_trim(0). */
#define ADMIN_TRIM_BYTES (1 << 20)

/* The version the listener reports for one group. */
struct admin_stamp {
	char md5[65]; /* "" if none held */
	int64_t last_modify_time;
};

/* ---- pure parts */

/* Form body of POST /configs/listener: "G=md5%2Ctime&...&namespaceId=NS" for every group in
 * groups[] (stamps indexed by group), percent-encoded. NULL on out of memory. */
char *admin_listener_body(const enum gw_group *groups, size_t n,
                          const struct admin_stamp stamps[GW_GROUP_COUNT],
                          const char *namespace_id);

/* "/configs/fetch?groupKeys=A&groupKeys=B&namespaceId=NS". NULL on out of memory. */
char *admin_fetch_path(const enum gw_group *groups, size_t n, const char *namespace_id);

/* The bootstrapInstanceInfo header's JSON: host name, agent name and version, port. */
char *admin_instance_info(const char *host_name, int port);

/* A listener reply: {"code":200,"data":["GROUP",...]} -> bit (1u << group) set in *changed
 * for each configured group named. Names of groups not configured, or unknown to us, are
 * ignored with a debug line (log may be NULL). err->kind: SYNC_OK, or SYNC_FAIL_CODE or
 * SYNC_FAIL_PARSE with -1. */
int admin_parse_listener(const char *body, size_t len, const enum gw_group *groups, size_t n,
                         const char *server, struct gw_log *log, unsigned *changed,
                         struct gw_err *err);

/* ---- one admin server */

struct admin;

int admin_open(struct admin **out, const struct cfg *cfg, size_t server_index, struct gw_log *log,
               struct gw_err *err);
void admin_close(struct admin *a);
const char *admin_server(const struct admin *a);

/* Make the current and every later call return at once with SYNC_STOPPED. Thread-safe. */
void admin_interrupt(struct admin *a);

/*
 * GET /configs/fetch for groups[0..n): out[group] receives one reference per group (other
 * slots NULL); *bytes the size of the reply body. On failure nothing is returned. held
 * (may be NULL, and its slots) are the versions held now: items whose text did not change
 * are carried over from them instead of parsed again.
 */
int admin_fetch(struct admin *a, const enum gw_group *groups, size_t n,
                struct group_data *const held[GW_GROUP_COUNT],
                struct group_data *out[GW_GROUP_COUNT], size_t *bytes, struct gw_err *err);

/*
 * POST /configs/listener with the held stamps of every configured group (a provisional
 * one, from the snapshot, is reported as none held, so the admin names the group at once
 * and its own version replaces it); the admin answers at once if a group differs, else
 * holds the request up to 60 s. *changed_mask: the configured groups the admin named (0
 * for an empty answer).
 */
int admin_listen(struct admin *a, const struct ingest_stamp held[GW_GROUP_COUNT],
                 unsigned *changed_mask, struct gw_err *err);

/*
 * The listener call a running agent makes, answered at once (`--once --dry-run`): every
 * configured group reported as not held (ADMIN_NO_MD5), so an admin that accepts the
 * request names the groups at once instead of holding it, and one that refuses the group
 * list ("group param invalid") says so now rather than at the daemon's first poll. Sent with
 * X-Real-PORT 0 and no instance information: it registers nothing. *named_mask: the
 * configured groups the admin named.
 */
int admin_listen_now(struct admin *a, unsigned *named_mask, struct gw_err *err);

#endif
