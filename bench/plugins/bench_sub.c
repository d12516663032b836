/*
 * The benchmark subscriber: accepts every change and does nothing with it (the "no-op
 * subscriber" of the figures), except report when its apply() is about to return, so a
 * benchmark can measure how long a change took to reach the subscribers.
 *
 * Each apply() ends by sending one datagram to the UNIX socket named by `report`:
 *   "A INSTANCE GROUP LASTMODIFYTIME T_NS N_ITEMS N_ADDED N_UPDATED N_REMOVED"
 * with T_NS from CLOCK_MONOTONIC (system-wide on Linux, so another process can subtract
 * its own timestamps). The counts let the benchmark check the delta: one changed rule
 * must arrive as exactly one update. Sending never blocks (MSG_DONTWAIT): a missing or
 * slow receiver costs a lost report, never a stalled dispatcher.
 *
 * Options: report (path; without it nothing is sent).
 */
#include <gwsync/subscriber.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Like the bundled subscribers, it reads no typed view (GW_SUB_TYPED_ON_DEMAND) and no list
 * (GW_SUB_LISTS_ON_DEMAND: the counts are all it reports); built with -DBENCH_SUB_FLAGS=0
 * it is a subscriber that needs every item's view and every list, as an older plugin does
 * (bench_sub_typed.so: the memory a typed view costs). */
#ifndef BENCH_SUB_FLAGS
#define BENCH_SUB_FLAGS (GW_SUB_TYPED_ON_DEMAND | GW_SUB_LISTS_ON_DEMAND)
#endif

struct bench_sub {
	const struct gw_host *host;
	int fd; /* -1: no report socket */
	struct sockaddr_un to;
	unsigned long lost;
};

static int bench_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct bench_sub *st = calloc(1, sizeof *st);
	if (!st)
		return -1;
	st->host = host;
	st->fd = -1;
	const char *path = NULL;
	if (host->config_string(host, config, "report", &path) == GW_CONFIG_INVALID) {
		free(st);
		return -1;
	}
	if (path) {
		if (strlen(path) >= sizeof st->to.sun_path) {
			host->error(host, "report: path too long: %s", path);
			free(st);
			return -1;
		}
		st->to.sun_family = AF_UNIX;
		strcpy(st->to.sun_path, path);
		st->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (st->fd < 0) {
			host->error(host, "report: cannot create a socket");
			free(st);
			return -1;
		}
	}
	*state = st;
	return 0;
}

static int bench_apply(void *state, const struct gw_host *host, const struct gw_change *ch)
{
	struct bench_sub *st = state;
	if (st->fd < 0)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char msg[512];
	int n = snprintf(msg, sizeof msg, "A %s %s %" PRId64 " %" PRId64 " %zu %zu %zu %zu\n",
	                 host->instance, ch->group_name, ch->version.last_modify_time,
	                 (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, ch->n_items, ch->n_added,
	                 ch->n_updated, ch->n_removed);
	if (n > 0 && sendto(st->fd, msg, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&st->to,
	                    sizeof st->to) < 0)
		st->lost++;
	return 0;
}

static void bench_fini(void *state, const struct gw_host *host)
{
	struct bench_sub *st = state;
	if (st->lost)
		host->log(host, GW_LOG_WARN, "%lu reports could not be sent", st->lost);
	if (st->fd >= 0)
		close(st->fd);
	free(st);
}

static const struct gw_option bench_options[] = {
    {"report", GW_OPT_PATH, NULL, 0, "the UNIX datagram socket to report each apply() to"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber bench_subscriber = {
    GWSYNC_SUBSCRIBER_INIT, .name = "bench",    .options = bench_options, .init = bench_init,
    .apply = bench_apply,   .fini = bench_fini, .flags = BENCH_SUB_FLAGS,
};

GWSYNC_EXPORT const struct gw_subscriber *gwsync_subscriber(void)
{
	return &bench_subscriber;
}
