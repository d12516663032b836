/*
 * fastadmin: a fast admin stand-in for the benchmarks. It speaks the admin's sync protocol
 * (PROTOCOL.md: GET /configs/fetch, POST /configs/listener with md5 comparison and a hold,
 * /platform/login) over HTTP/1.1 keep-alive, but serves precomputed bytes from one
 * single-threaded epoll loop, so a benchmark measures gwsync and not the test server:
 * replies are writev()s of the dataset's own buffers (no copy, no JSON encoding), and every
 * socket has TCP_NODELAY (without it a reply on a reused connection can stall ~40 ms on
 * delayed ACK).
 *
 * With --propagate N it also drives the change-propagation benchmark, because the moment
 * the admin answers a held listener is only known here. Each round: wait until both the
 * agent and the floor client (requests carrying "X-Bench-Client: floor") hold a listener,
 * change the mutable rule, answer the floor client's listener and wait for its report
 * (it fetched the group), then answer the agent's listener and wait for one report per
 * subscriber (each apply() returned), then let the machine settle (with --quiet-pidfile:
 * until the agent's own background work, such as writing its snapshot, is done). Reports
 * are datagrams on a UNIX socket (--report), timestamped with CLOCK_MONOTONIC by the
 * sender, which is the same clock in every process. One line per measured round goes to
 * --out: "SEQ AGENT_NS FLOOR_NS BAD", BAD counting the subscriber reports so far (warm-up
 * included) whose delta was not exactly one update.
 *
 * GET /_bench/state answers counters and how many listeners are held, for the harness.
 * The first stdout line is "LISTENING 127.0.0.1 PORT"; the second "BYTES N" is the size of
 * a fetch reply holding every group (the JSON the agent downloads at start-up).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "benchdata.h"

#define MAX_CONNS  256
#define MAX_IN     (1 << 20)
#define MAX_PARAMS 64
#define SCRATCH    4096
#define MAX_IOV    (8 + 3 * BENCH_MAX_GROUPS)

struct conn {
	int fd;
	char *in;
	size_t in_len, in_cap;
	struct iovec iov[MAX_IOV];
	int niov, iov_pos;
	char scratch[SCRATCH]; /* headers and small bodies of the response being sent */
	int close_after;
	int sent_continue;
	int held;
	int floor; /* X-Bench-Client: floor */
	int64_t hold_deadline;
	int want_out;
};

struct stats {
	unsigned long requests, listeners, fetches, answered_at_once, answered_change,
	    answered_timeout;
	unsigned long answered_agent; /* listener answers to the agent (any kind): each should
	                               * cost the agent's poller one wake-up, no more */
};

enum phase { P_OFF, P_WAIT_HELD, P_WAIT_FLOOR, P_WAIT_AGENT, P_SETTLE, P_DONE };

struct driver {
	enum phase phase;
	unsigned long total, warmup, seq;
	int subscribers;
	int use_floor;
	int64_t settle_ns, settle_until, t0, floor_ns, t_last;
	const char *quiet_pidfile; /* holds the agent's pid once it runs */
	int64_t settle_start, last_cpu;
	int reports;
	unsigned long bad_deltas;
	struct bench_group *rule;
	char *digits;
	int64_t base_lmt;
	FILE *out;
};

struct admin {
	int ep, lfd, rfd;
	int port;
	int64_t hold_ns;
	struct bench_data data;
	struct conn *conns[MAX_CONNS];
	struct stats st;
	struct driver drv;
};

static void conn_close(struct admin *a, struct conn *c)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (a->conns[i] == c)
			a->conns[i] = NULL;
	epoll_ctl(a->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c);
}

static void want_out(struct admin *a, struct conn *c, int on)
{
	if (c->want_out == on)
		return;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0),
	                         .data.ptr = c};
	epoll_ctl(a->ep, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_out = on;
}

/* Write what is pending. Returns -1 if the connection is gone. */
static int flush_out(struct admin *a, struct conn *c)
{
	while (c->iov_pos < c->niov) {
		ssize_t n = writev(c->fd, c->iov + c->iov_pos, c->niov - c->iov_pos);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				want_out(a, c, 1);
				return 0;
			}
			return -1;
		}
		while (n > 0 && c->iov_pos < c->niov) {
			struct iovec *v = &c->iov[c->iov_pos];
			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				c->iov_pos++;
			} else {
				v->iov_base = (char *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	c->niov = c->iov_pos = 0;
	want_out(a, c, 0);
	return c->close_after ? -1 : 0;
}

static int pending(const struct conn *c)
{
	return c->iov_pos < c->niov;
}

/* Queue a 200 response whose body is body[0..nbody) (pointers stay valid until sent). */
static void respond(struct conn *c, const struct iovec *body, int nbody)
{
	size_t len = 0;
	for (int i = 0; i < nbody; i++)
		len += body[i].iov_len;
	/* the header goes at the end of scratch: bodies built in scratch start at 0 */
	char *h = c->scratch + SCRATCH - 256;
	int n = snprintf(h, 256,
	                 "HTTP/1.1 200 OK\r\nContent-Type: application/json;charset=UTF-8\r\n"
	                 "Content-Length: %zu\r\n%s\r\n",
	                 len, c->close_after ? "Connection: close\r\n" : "");
	c->niov = c->iov_pos = 0;
	c->iov[c->niov++] = (struct iovec){h, (size_t)n};
	for (int i = 0; i < nbody && c->niov < MAX_IOV; i++)
		c->iov[c->niov++] = body[i];
}

static void respond_text(struct conn *c, const char *text)
{
	size_t n = strlen(text);
	if (n > SCRATCH - 300)
		n = SCRATCH - 300;
	memcpy(c->scratch, text, n);
	struct iovec v = {c->scratch, n};
	respond(c, &v, 1);
}

/* Answer a listener with the given group names; returns the time the answer was written. */
static int64_t answer_listener(struct admin *a, struct conn *c, struct bench_group **g, size_t n)
{
	char body[512];
	size_t off =
	    (size_t)snprintf(body, sizeof body, "{\"code\":200,\"message\":\"success\",\"data\":[");
	for (size_t i = 0; i < n && off < sizeof body - 64; i++)
		off += (size_t)snprintf(body + off, sizeof body - off, "%s\"%s\"", i ? "," : "",
		                        g[i]->name);
	snprintf(body + off, sizeof body - off, "]}");
	c->held = 0;
	if (!c->floor)
		a->st.answered_agent++;
	respond_text(c, body);
	int64_t t = bench_now_ns();
	if (flush_out(a, c) < 0)
		conn_close(a, c);
	return t;
}

/* ---------------------------------------------------------------- request parsing */

struct param {
	char name[64];
	char value[512];
};

struct request {
	char method[16];
	char path[256];
	struct param p[MAX_PARAMS];
	int np;
};

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static void url_decode(char *dst, size_t cap, const char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		if (s[i] == '+') {
			dst[o++] = ' ';
		} else if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
		           hexval(s[i + 2]) >= 0) {
			dst[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			dst[o++] = s[i];
		}
	}
	dst[o] = '\0';
}

static void parse_params(struct request *r, const char *s, size_t n)
{
	const char *end = s + n;
	while (s < end && r->np < MAX_PARAMS) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(s, '=', (size_t)(stop - s));
		struct param *p = &r->p[r->np++];
		url_decode(p->name, sizeof p->name, s, (size_t)((eq ? eq : stop) - s));
		if (eq)
			url_decode(p->value, sizeof p->value, eq + 1, (size_t)(stop - eq - 1));
		else
			p->value[0] = '\0';
		s = stop + 1;
	}
}

static const char *param(const struct request *r, const char *name)
{
	for (int i = 0; i < r->np; i++)
		if (strcmp(r->p[i].name, name) == 0)
			return r->p[i].value;
	return NULL;
}

/* ---------------------------------------------------------------- routes */

static void route_fetch(struct admin *a, struct conn *c, const struct request *r)
{
	a->st.fetches++;
	struct bench_group *sel[BENCH_MAX_GROUPS];
	size_t ns = 0;
	int any = 0;
	for (int i = 0; i < r->np; i++) {
		if (strcmp(r->p[i].name, "groupKeys") != 0)
			continue;
		any = 1;
		struct bench_group *g = bench_data_group(&a->data, r->p[i].value);
		if (!g) {
			char msg[256];
			snprintf(msg, sizeof msg,
			         "{\"code\":500,\"message\":\"unknown group %.64s\",\"data\":null}",
			         r->p[i].value);
			respond_text(c, msg);
			return;
		}
		int dup = 0;
		for (size_t j = 0; j < ns; j++)
			dup |= sel[j] == g;
		if (!dup && ns < BENCH_MAX_GROUPS)
			sel[ns++] = g;
	}
	if (!any)
		for (size_t i = 0; i < a->data.n; i++)
			sel[ns++] = &a->data.g[i];

	struct iovec body[MAX_IOV];
	int nb = 0;
	size_t off = 0;
	body[nb++] = (struct iovec){(void *)BENCH_FETCH_HEAD, strlen(BENCH_FETCH_HEAD)};
	for (size_t i = 0; i < ns; i++) {
		size_t n = bench_group_prefix(sel[i], i == 0, c->scratch + off, 256);
		body[nb++] = (struct iovec){c->scratch + off, n};
		off += n;
		body[nb++] = (struct iovec){sel[i]->items, sel[i]->len};
		body[nb++] = (struct iovec){(void *)BENCH_GROUP_TAIL, strlen(BENCH_GROUP_TAIL)};
	}
	body[nb++] = (struct iovec){(void *)BENCH_FETCH_TAIL, strlen(BENCH_FETCH_TAIL)};
	respond(c, body, nb);
}

static void route_listener(struct admin *a, struct conn *c, const struct request *r)
{
	a->st.listeners++;
	struct bench_group *changed[BENCH_MAX_GROUPS];
	size_t n = 0;
	for (size_t i = 0; i < a->data.n; i++) {
		const char *v = param(r, a->data.g[i].name);
		if (!v)
			continue;
		size_t len = strcspn(v, ",");
		if (len != strlen(a->data.g[i].md5) || strncmp(v, a->data.g[i].md5, len) != 0)
			changed[n++] = &a->data.g[i];
	}
	if (n > 0) {
		a->st.answered_at_once++;
		answer_listener(a, c, changed, n);
		return;
	}
	c->held = 1;
	c->hold_deadline = bench_now_ns() + a->hold_ns;
}

static void route_state(struct admin *a, struct conn *c)
{
	int held = 0, floor = 0;
	for (int i = 0; i < MAX_CONNS; i++)
		if (a->conns[i] && a->conns[i]->held) {
			held++;
			floor += a->conns[i]->floor;
		}
	char body[512];
	snprintf(body, sizeof body,
	         "{\"held\":%d,\"held_agent\":%d,\"held_floor\":%d,\"requests\":%lu,"
	         "\"listeners\":%lu,\"fetches\":%lu,\"answered_at_once\":%lu,"
	         "\"answered_change\":%lu,\"answered_timeout\":%lu,\"answered_agent\":%lu,"
	         "\"round\":%lu}",
	         held, held - floor, floor, a->st.requests, a->st.listeners, a->st.fetches,
	         a->st.answered_at_once, a->st.answered_change, a->st.answered_timeout,
	         a->st.answered_agent, a->drv.seq);
	respond_text(c, body);
}

/* Handle one complete request; returns the bytes it used, 0 if incomplete, -1 if bad. */
static long handle_one(struct admin *a, struct conn *c)
{
	char *hend = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (!hend)
		return c->in_len > 65536 ? -1 : 0;
	size_t hlen = (size_t)(hend - c->in) + 4;
	struct request *r = calloc(1, sizeof *r);
	if (!r)
		return -1;
	char target[2048] = "";
	char *line_end = memchr(c->in, '\r', hlen);
	char line[2300];
	size_t ll = (size_t)(line_end - c->in) < sizeof line - 1 ? (size_t)(line_end - c->in)
	                                                         : sizeof line - 1;
	memcpy(line, c->in, ll);
	line[ll] = '\0';
	if (sscanf(line, "%15s %2047s", r->method, target) != 2) {
		free(r);
		return -1;
	}
	size_t clen = 0;
	int expect = 0;
	c->floor = 0;
	for (char *h = line_end + 2; h < hend; h = strstr(h, "\r\n") + 2) {
		if (strncasecmp(h, "Content-Length:", 15) == 0)
			clen = strtoul(h + 15, NULL, 10);
		else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0) {
			free(r);
			return -1; /* chunked request bodies are not needed by any client here */
		} else if (strncasecmp(h, "Expect:", 7) == 0)
			expect = 1;
		else if (strncasecmp(h, "Connection:", 11) == 0 && strstr(h, "close") &&
		         strstr(h, "close") < strstr(h, "\r\n"))
			c->close_after = 1;
		else if (strncasecmp(h, "X-Bench-Client:", 15) == 0 && strstr(h, "floor") &&
		         strstr(h, "floor") < strstr(h, "\r\n"))
			c->floor = 1;
	}
	if (clen > MAX_IN / 2) {
		free(r);
		return -1;
	}
	if (c->in_len < hlen + clen) {
		if (expect && !c->sent_continue) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
			if (write(c->fd, cont, sizeof cont - 1) < 0) {
				free(r);
				return -1;
			}
			c->sent_continue = 1;
		}
		free(r);
		return 0;
	}
	c->sent_continue = 0;
	a->st.requests++;
	char *q = strchr(target, '?');
	size_t plen = q ? (size_t)(q - target) : strlen(target);
	snprintf(r->path, sizeof r->path, "%.*s", (int)plen, target);
	if (q)
		parse_params(r, q + 1, strlen(q + 1));
	if (clen > 0)
		parse_params(r, c->in + hlen, clen);

	if (strcmp(r->path, "/configs/fetch") == 0)
		route_fetch(a, c, r);
	else if (strcmp(r->path, "/configs/listener") == 0 && strcmp(r->method, "POST") == 0)
		route_listener(a, c, r);
	else if (strcmp(r->path, "/platform/login") == 0)
		respond_text(c, "{\"code\":200,\"message\":\"login dashboard user success\","
		                "\"data\":{\"id\":\"1\",\"userName\":\"admin\","
		                "\"token\":\"bench-token\",\"expiredTime\":86400000}}");
	else if (strcmp(r->path, "/_bench/state") == 0)
		route_state(a, c);
	else
		respond_text(c, "{\"code\":404,\"message\":\"not found\",\"data\":null}");
	free(r);
	return (long)(hlen + clen);
}

/* Process buffered requests while none is held or being written. */
static int process(struct admin *a, struct conn *c)
{
	while (!c->held && !pending(c) && c->in_len > 0) {
		long used = handle_one(a, c);
		if (used < 0)
			return -1;
		if (used == 0)
			break;
		memmove(c->in, c->in + used, c->in_len - (size_t)used);
		c->in_len -= (size_t)used;
		c->in[c->in_len] = '\0';
		if (pending(c) && flush_out(a, c) < 0)
			return -1;
	}
	return 0;
}

static int on_readable(struct admin *a, struct conn *c)
{
	for (;;) {
		if (c->in_cap - c->in_len < 4096) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 16384;
			if (cap > MAX_IN)
				return -1;
			char *p = realloc(c->in, cap);
			if (!p)
				return -1;
			c->in = p;
			c->in_cap = cap;
		}
		/* one byte stays free for a terminating NUL: header parsing uses strstr() */
		ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		c->in_len += (size_t)n;
		c->in[c->in_len] = '\0';
	}
	return process(a, c);
}

static void on_accept(struct admin *a)
{
	for (;;) {
		int fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct conn *c = calloc(1, sizeof *c);
		int slot = -1;
		for (int i = 0; i < MAX_CONNS && slot < 0; i++)
			if (!a->conns[i])
				slot = i;
		if (!c || slot < 0) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		a->conns[slot] = c;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
		epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* ---------------------------------------------------------------- propagation driver */

/* CPU time (ns) used so far by every live thread of pid, from schedstat; -1 if unknown. */
static int64_t process_cpu_ns(long pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		char f[128];
		snprintf(f, sizeof f, "/proc/%ld/task/%.20s/schedstat", pid, e->d_name);
		FILE *fp = fopen(f, "r");
		long long ns = 0;
		if (fp) {
			if (fscanf(fp, "%lld", &ns) == 1)
				sum += ns;
			fclose(fp);
		}
	}
	closedir(dir);
	return sum;
}

/*
 * Settling between rounds: the agent keeps working after its subscribers returned (the
 * snapshot writer saves the new version), and that work must not overlap the next
 * round's measurements. So after the minimum settle time, wait until the agent's
 * threads used under 1 ms of CPU in 10 ms (at most 5 s).
 */
static int agent_quiet(struct driver *d, int64_t now)
{
	if (!d->quiet_pidfile)
		return 1;
	FILE *f = fopen(d->quiet_pidfile, "r");
	long pid = 0;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	int64_t cpu = pid > 0 ? process_cpu_ns(pid) : -1;
	if (cpu < 0 || now - d->settle_start > 5000000000LL)
		return 1;
	int quiet = d->last_cpu >= 0 && cpu - d->last_cpu < 1000000;
	d->last_cpu = cpu;
	d->settle_until = now + 10000000;
	return quiet;
}

/* Answer every held listener of one kind (floor or agent) with the rule group. Returns
 * the time of the last answer, or 0 if none was held. */
static int64_t answer_held(struct admin *a, int floor)
{
	int64_t t = 0;
	struct bench_group *g = a->drv.rule;
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = a->conns[i];
		if (c && c->held && c->floor == floor) {
			a->st.answered_change++;
			int64_t ti = answer_listener(a, c, &g, 1);
			if (!t)
				t = ti; /* the first answer starts the clock */
		}
	}
	return t;
}

static void driver_step(struct admin *a)
{
	struct driver *d = &a->drv;
	int64_t now = bench_now_ns();
	if (d->phase == P_SETTLE && now >= d->settle_until && agent_quiet(d, now))
		d->phase = P_WAIT_HELD;
	if (d->phase != P_WAIT_HELD)
		return;
	int agent = 0, floor = 0, busy = 0;
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = a->conns[i];
		if (!c)
			continue;
		busy |= pending(c);
		if (c->held)
			*(c->floor ? &floor : &agent) += 1;
	}
	/* the rule's bytes are changed in place: never while a reply is still being sent */
	if (!agent || (d->use_floor && !floor) || busy)
		return;
	d->seq++;
	bench_group_set_version(d->rule, d->digits, d->base_lmt, d->seq);
	if (d->use_floor) {
		d->phase = P_WAIT_FLOOR;
		d->t0 = answer_held(a, 1);
	} else {
		d->floor_ns = 0;
		d->phase = P_WAIT_AGENT;
		d->reports = 0;
		d->t_last = 0;
		d->t0 = answer_held(a, 0);
	}
}

static void driver_report(struct admin *a, char *msg)
{
	struct driver *d = &a->drv;
	if (msg[0] == 'F' && d->phase == P_WAIT_FLOOR) {
		char group[32];
		int64_t lmt, t;
		if (sscanf(msg, "F %31s %" SCNd64 " %" SCNd64, group, &lmt, &t) != 3 ||
		    lmt != d->rule->lmt)
			return;
		d->floor_ns = t - d->t0;
		d->phase = P_WAIT_AGENT;
		d->reports = 0;
		d->t_last = 0;
		d->t0 = answer_held(a, 0);
	} else if (msg[0] == 'A' && d->phase == P_WAIT_AGENT) {
		char inst[128], group[32];
		int64_t lmt, t;
		unsigned long items, added, updated, removed;
		if (sscanf(msg, "A %127s %31s %" SCNd64 " %" SCNd64 " %lu %lu %lu %lu", inst, group,
		           &lmt, &t, &items, &added, &updated, &removed) != 8 ||
		    strcmp(group, d->rule->name) != 0 || lmt != d->rule->lmt)
			return;
		if (added != 0 || updated != 1 || removed != 0)
			d->bad_deltas++;
		if (t > d->t_last)
			d->t_last = t;
		if (++d->reports < d->subscribers)
			return;
		if (d->seq > d->warmup)
			fprintf(d->out, "%lu %" PRId64 " %" PRId64 " %lu\n", d->seq - d->warmup,
			        d->t_last - d->t0, d->floor_ns, d->bad_deltas);
		if (d->seq >= d->total) {
			fflush(d->out);
			d->phase = P_DONE;
			printf("DONE rounds=%lu bad_deltas=%lu\n", d->seq - d->warmup,
			       d->bad_deltas);
			fflush(stdout);
			return;
		}
		d->phase = P_SETTLE;
		d->settle_start = bench_now_ns();
		d->settle_until = d->settle_start + d->settle_ns;
		d->last_cpu = -1;
	}
}

static void on_reports(struct admin *a)
{
	char msg[512];
	for (;;) {
		ssize_t n = recv(a->rfd, msg, sizeof msg - 1, MSG_DONTWAIT);
		if (n < 0)
			return;
		msg[n] = '\0';
		driver_report(a, msg);
	}
}

/* ---------------------------------------------------------------- main */

static int listen_on(struct admin *a, int port)
{
	a->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(a->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	if (a->lfd < 0 || bind(a->lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(a->lfd, 128) < 0 || getsockname(a->lfd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("fastadmin: listen");
		return -1;
	}
	a->port = ntohs(sa.sin_port);
	return 0;
}

static int report_socket(struct admin *a, const char *path)
{
	a->rfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof su.sun_path) {
		fprintf(stderr, "fastadmin: report path too long: %s\n", path);
		return -1;
	}
	strcpy(su.sun_path, path);
	unlink(path);
	if (a->rfd < 0 || bind(a->rfd, (struct sockaddr *)&su, sizeof su) < 0) {
		perror("fastadmin: report socket");
		return -1;
	}
	int big = 1 << 20;
	setsockopt(a->rfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	return 0;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: fastadmin --data DIR [--port N] [--hold MS]\n"
	    "                 [--propagate N --warmup N --subscribers K --report SOCK --out FILE\n"
	    "                  [--no-floor] [--settle MS] [--quiet-pidfile FILE]]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct admin a;
	const char *dir = NULL, *report = NULL, *out = NULL;
	int port = 0;
	long hold_ms = 60000, settle_ms = 20;
	a.rfd = -1;
	a.drv.subscribers = 1;
	a.drv.use_floor = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--no-floor") == 0) {
			a.drv.use_floor = 0;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (strcmp(o, "--data") == 0)
			dir = v;
		else if (strcmp(o, "--port") == 0)
			port = atoi(v);
		else if (strcmp(o, "--hold") == 0)
			hold_ms = atol(v);
		else if (strcmp(o, "--propagate") == 0)
			a.drv.total = strtoul(v, NULL, 10);
		else if (strcmp(o, "--warmup") == 0)
			a.drv.warmup = strtoul(v, NULL, 10);
		else if (strcmp(o, "--subscribers") == 0)
			a.drv.subscribers = atoi(v);
		else if (strcmp(o, "--report") == 0)
			report = v;
		else if (strcmp(o, "--out") == 0)
			out = v;
		else if (strcmp(o, "--settle") == 0)
			settle_ms = atol(v);
		else if (strcmp(o, "--quiet-pidfile") == 0)
			a.drv.quiet_pidfile = v;
		else
			usage();
	}
	if (!dir)
		usage();
	signal(SIGPIPE, SIG_IGN);
	a.hold_ns = (int64_t)hold_ms * 1000000;
	if (bench_data_load(dir, &a.data) < 0)
		return 1;
	if (a.drv.total > 0) {
		a.drv.rule = bench_data_group(&a.data, "RULE");
		a.drv.digits = a.drv.rule ? bench_mutable_digits(a.drv.rule) : NULL;
		if (!a.drv.digits || !report || !out) {
			fprintf(stderr,
			        "fastadmin: --propagate needs --report, --out and a dataset "
			        "with a mutable RULE\n");
			return 2;
		}
		a.drv.base_lmt = a.drv.rule->lmt;
		a.drv.total += a.drv.warmup;
		a.drv.settle_ns = (int64_t)settle_ms * 1000000;
		a.drv.phase = P_WAIT_HELD;
		a.drv.out = fopen(out, "w");
		if (!a.drv.out) {
			perror(out);
			return 1;
		}
		setvbuf(a.drv.out, NULL, _IOLBF, 0); /* a run cut short still leaves its rounds */
	}
	a.ep = epoll_create1(EPOLL_CLOEXEC);
	if (listen_on(&a, port) < 0 || (report && report_socket(&a, report) < 0))
		return 1;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &a.lfd};
	epoll_ctl(a.ep, EPOLL_CTL_ADD, a.lfd, &ev);
	if (a.rfd >= 0) {
		ev.data.ptr = &a.rfd;
		epoll_ctl(a.ep, EPOLL_CTL_ADD, a.rfd, &ev);
	}
	size_t all_len;
	char *all = bench_fetch_reply(&a.data, NULL, 0, &all_len);
	free(all);
	printf("LISTENING 127.0.0.1 %d\nBYTES %zu\n", a.port, all_len);
	fflush(stdout);

	while (a.drv.phase != P_DONE) {
		int64_t now = bench_now_ns(), next = now + 1000000000;
		for (int i = 0; i < MAX_CONNS; i++)
			if (a.conns[i] && a.conns[i]->held && a.conns[i]->hold_deadline < next)
				next = a.conns[i]->hold_deadline;
		if (a.drv.phase == P_SETTLE && a.drv.settle_until < next)
			next = a.drv.settle_until;
		int timeout = next > now ? (int)((next - now + 999999) / 1000000) : 0;
		struct epoll_event evs[64];
		int n = epoll_wait(a.ep, evs, 64, timeout);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &a.lfd) {
				on_accept(&a);
			} else if (p == &a.rfd) {
				on_reports(&a);
			} else {
				struct conn *c = p;
				int bad = (evs[i].events & (EPOLLERR | EPOLLHUP)) != 0;
				if (!bad && (evs[i].events & EPOLLOUT))
					bad = flush_out(&a, c) < 0 || process(&a, c) < 0;
				if (!bad && (evs[i].events & (EPOLLIN | EPOLLRDHUP)))
					bad = on_readable(&a, c) < 0;
				if (bad)
					conn_close(&a, c);
			}
		}
		now = bench_now_ns();
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = a.conns[i];
			if (c && c->held && c->hold_deadline <= now) {
				a.st.answered_timeout++;
				answer_listener(&a, c, NULL, 0);
			}
		}
		if (a.drv.phase != P_OFF)
			driver_step(&a);
	}
	if (a.drv.out)
		fclose(a.drv.out);
	if (report)
		unlink(report);
	return 0;
}
