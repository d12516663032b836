/*
 * pacedload: the keep-alive HTTP/1.1 load of figure 11 (the gateway at scale), paced or as
 * fast as the server answers, on one thread.
 *
 * Why written here: the figure compares the gateway under a fixed load with and without
 * configuration changes, which needs an open-loop load (requests sent on a schedule, not
 * when the previous answer came back) and latencies measured from when each request was
 * due, so a stall shows up as the queue behind it and not as one slow request (what wrk2
 * does; Debian has only wrk, which is closed-loop). Python cannot pace tens of thousands
 * of requests per second.
 *
 * Paced (RATE > 0): request k is due at start + k / RATE and goes out on the first idle
 * connection (one request in flight per connection, no pipelining); its latency runs from
 * its due time to the last byte of its answer. The loop waits with epoll_pwait2 until the
 * next request is due (epoll_wait's millisecond would add up to 1 ms to every latency; a
 * timerfd costs two more system calls per request). Requests
 * due but not sent when the window ends, and requests that time out, count with the time
 * they had waited when given up, so the percentiles do not hide them.
 * As fast as possible (RATE 0): every connection sends its next request as soon as the
 * previous answer is in (wrk's way); latency from send to answer.
 *
 * Usage: pacedload PORT RATE SECONDS CONNS PATHS_FILE [TIMEOUT_S]
 *   PATHS_FILE: one request path per line, used in turn.
 * stdout, one line of key=value: sent done window_done ok non2xx errors timeouts unsent,
 * rate (answers within the window per second), p50 p90 p99 p999 max (ms), and sec=N,N,..
 * (answers per second of the window). SIGTERM ends the window early (the rate is then over
 * the shorter window).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RBUF      16384
#define MAX_PATHS 4096

struct conn {
	int fd;
	int connecting;
	int busy;       /* a request is in flight */
	int64_t due;    /* the in-flight request's due time (paced) or send time */
	int64_t sent;   /* when it was written */
	char buf[RBUF]; /* the answer so far */
	size_t len;
};

struct run {
	int port;
	double rate;
	int64_t start, end, timeout;
	int nconn;
	struct conn *c;
	int ep;
	char **req;
	size_t *req_len;
	size_t npaths, next_path;
	uint64_t next; /* index of the next request to send (paced: due at start + next/rate) */
	uint64_t sent, done, window_done, ok, non2xx, errors, timeouts, unsent;
	double *lat; /* ms */
	size_t nlat, cap;
	uint64_t *per_sec;
	int seconds;
};

static volatile sig_atomic_t stop_now; /* SIGTERM: end the window now, then report */

static void on_term(int sig)
{
	(void)sig;
	stop_now = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(struct run *r, double ms)
{
	if (r->nlat == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1 << 16;
		double *p = realloc(r->lat, cap * sizeof *p);
		if (!p) {
			fprintf(stderr, "pacedload: out of memory\n");
			exit(1);
		}
		r->lat = p;
		r->cap = cap;
	}
	r->lat[r->nlat++] = ms;
}

static int open_conn(struct run *r, struct conn *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->connecting = 1;
	c->busy = 0;
	c->len = 0;
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
	return epoll_ctl(r->ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Drop the connection (its in-flight request counted by the caller) and open another. */
static void reopen(struct run *r, struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (open_conn(r, c) < 0) {
		fprintf(stderr, "pacedload: cannot connect to port %d: %s\n", r->port,
		        strerror(errno));
		exit(1);
	}
}

static int send_one(struct run *r, struct conn *c, int64_t due)
{
	const char *q = r->req[r->next_path];
	size_t n = r->req_len[r->next_path];
	r->next_path = (r->next_path + 1) % r->npaths;
	ssize_t w = write(c->fd, q, n);
	if (w != (ssize_t)n)
		return -1; /* an idle keep-alive socket's buffer takes a short request whole */
	c->busy = 1;
	c->due = due;
	c->sent = now_ns();
	c->len = 0;
	r->sent++;
	return 0;
}

/* The length of a complete answer in c->buf (headers and body), 0 if not complete yet, -1
 * if it cannot be read; *status and *close_after set when complete. */
static long complete(struct conn *c, int *status, int *close_after)
{
	c->buf[c->len < RBUF ? c->len : RBUF - 1] = '\0';
	char *eoh = strstr(c->buf, "\r\n\r\n");
	if (!eoh)
		return c->len >= RBUF - 1 ? -1 : 0;
	size_t hlen = (size_t)(eoh - c->buf) + 4;
	if (sscanf(c->buf, "HTTP/1.%*d %d", status) != 1)
		return -1;
	*close_after = 0;
	long clen = -1;
	int chunked = 0;
	for (char *l = strstr(c->buf, "\r\n"); l && l < eoh; l = strstr(l + 2, "\r\n")) {
		char *h = l + 2;
		if (strncasecmp(h, "Content-Length:", 15) == 0)
			clen = strtol(h + 15, NULL, 10);
		else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0 && strstr(h, "chunked") &&
		         strstr(h, "chunked") < strstr(h, "\r\n"))
			chunked = 1;
		else if (strncasecmp(h, "Connection:", 11) == 0 && strcasestr(h, "close") &&
		         strcasestr(h, "close") < strstr(h, "\r\n"))
			*close_after = 1;
	}
	if (clen >= 0)
		return c->len >= hlen + (size_t)clen ? (long)(hlen + (size_t)clen) : 0;
	if (!chunked)
		return -1; /* neither: the tool's servers never answer so */
	size_t at = hlen;
	for (;;) {
		char *nl = memmem(c->buf + at, c->len - at, "\r\n", 2);
		if (!nl)
			return 0;
		long sz = strtol(c->buf + at, NULL, 16);
		at = (size_t)(nl - c->buf) + 2;
		if (sz == 0)
			return c->len >= at + 2 ? (long)(at + 2) : 0;
		at += (size_t)sz + 2;
		if (at > c->len)
			return 0;
	}
}

static void finish(struct run *r, struct conn *c, int status, int64_t t)
{
	c->busy = 0;
	r->done++;
	if (t <= r->end) {
		r->window_done++;
		int s = (int)((t - r->start) / 1000000000);
		if (s >= 0 && s < r->seconds)
			r->per_sec[s]++;
	}
	if (status >= 200 && status < 300)
		r->ok++;
	else
		r->non2xx++;
	record(r, (double)(t - c->due) / 1e6);
}

/* One read per readiness (epoll is level-triggered: what is left wakes it again), so an
 * answer costs one read, not one more that finds nothing. */
static void on_readable(struct run *r, struct conn *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, RBUF - 1 - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0 || !c->busy) {
		if (c->busy) {
			r->errors++;
			record(r, (double)(now_ns() - c->due) / 1e6);
		}
		reopen(r, c);
		return;
	}
	c->len += (size_t)n;
	int status = 0, close_after = 0;
	long whole = complete(c, &status, &close_after);
	if (whole < 0) {
		r->errors++;
		record(r, (double)(now_ns() - c->due) / 1e6);
		reopen(r, c);
		return;
	}
	if (whole > 0) {
		finish(r, c, status, now_ns());
		if (close_after || (size_t)whole != c->len)
			reopen(r, c);
		return;
	}
}

static int64_t due_of(const struct run *r, uint64_t k)
{
	return r->start + (int64_t)((double)k * 1e9 / r->rate);
}

/* Send what is due (paced) or keep every idle connection busy (closed loop). */
static void feed(struct run *r, int64_t t)
{
	for (int i = 0; i < r->nconn; i++) {
		struct conn *c = &r->c[i];
		if (c->fd < 0 || c->connecting || c->busy)
			continue;
		if (r->rate > 0) {
			int64_t due = due_of(r, r->next);
			if (due > t || due > r->end)
				break;
			if (send_one(r, c, due) < 0) {
				reopen(r, c);
				continue;
			}
			r->next++;
		} else if (t < r->end) {
			if (send_one(r, c, t) < 0)
				reopen(r, c);
		}
	}
}

static void check_timeouts(struct run *r, int64_t t)
{
	for (int i = 0; i < r->nconn; i++) {
		struct conn *c = &r->c[i];
		if (c->fd >= 0 && c->busy && t - c->sent > r->timeout) {
			r->timeouts++;
			record(r, (double)(t - c->due) / 1e6);
			reopen(r, c);
		}
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
	return v[(k ? k : 1) - 1];
}

static int load_paths(struct run *r, const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		perror(file);
		return -1;
	}
	r->req = calloc(MAX_PATHS, sizeof *r->req);
	r->req_len = calloc(MAX_PATHS, sizeof *r->req_len);
	char line[2048];
	while (r->npaths < MAX_PATHS && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		char q[2600];
		int n = snprintf(q, sizeof q, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", line,
		                 r->port);
		r->req[r->npaths] = strdup(q);
		r->req_len[r->npaths++] = (size_t)n;
	}
	fclose(f);
	if (!r->npaths) {
		fprintf(stderr, "pacedload: %s: no paths\n", file);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr,
		        "usage: pacedload PORT RATE SECONDS CONNS PATHS_FILE [TIMEOUT_S]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	struct run r = {0};
	r.port = atoi(argv[1]);
	r.rate = atof(argv[2]);
	double secs = atof(argv[3]);
	r.nconn = atoi(argv[4]);
	r.timeout = (int64_t)((argc == 7 ? atof(argv[6]) : 10.0) * 1e9);
	if (r.port <= 0 || r.rate < 0 || secs <= 0 || r.nconn <= 0 || load_paths(&r, argv[5]) < 0)
		return 2;
	r.seconds = (int)secs + 1;
	r.per_sec = calloc((size_t)r.seconds, sizeof *r.per_sec);
	r.c = calloc((size_t)r.nconn, sizeof *r.c);
	r.ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < r.nconn; i++)
		if (open_conn(&r, &r.c[i]) < 0) {
			fprintf(stderr, "pacedload: cannot connect to port %d\n", r.port);
			return 1;
		}
	/* connections first, then the clock: the window measures requests, not handshakes */
	int64_t ready_by = now_ns() + 5000000000LL;
	for (int open = 0; open < r.nconn && now_ns() < ready_by;) {
		struct epoll_event evs[64];
		int n = epoll_wait(r.ep, evs, 64, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c && c->connecting && (evs[i].events & EPOLLOUT)) {
				int err = 0;
				socklen_t l = sizeof err;
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err) {
					fprintf(stderr, "pacedload: connect: %s\n", strerror(err));
					return 1;
				}
				c->connecting = 0;
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
				epoll_ctl(r.ep, EPOLL_CTL_MOD, c->fd, &ev);
				open++;
			}
		}
	}
	r.start = now_ns();
	r.end = r.start + (int64_t)(secs * 1e9);
	int64_t stop = r.end + r.timeout;
	feed(&r, r.start);
	for (;;) {
		int64_t t = now_ns();
		if (stop_now && t < r.end) {
			r.end = t;
			secs = (double)(r.end - r.start) / 1e9;
			stop = r.end + r.timeout;
		}
		int busy = 0, idle = 0;
		for (int i = 0; i < r.nconn; i++) {
			busy += r.c[i].busy;
			idle += r.c[i].fd >= 0 && !r.c[i].connecting && !r.c[i].busy;
		}
		if (t >= stop || (t >= r.end && !busy))
			break;
		/* wake for the next due request only if a connection can take it: with all of
		 * them busy, an answer is what frees one (a deadline in the past would spin) */
		int64_t wait = 50000000;
		if (r.rate > 0 && idle && due_of(&r, r.next) <= r.end) {
			wait = due_of(&r, r.next) - t;
			wait = wait < 0 ? 0 : wait;
		}
		struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
		struct epoll_event evs[256];
		int n = epoll_pwait2(r.ep, evs, 256, &ts, NULL);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->connecting) {
				int err = 0;
				socklen_t l = sizeof err;
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err) {
					reopen(&r, c);
					continue;
				}
				c->connecting = 0;
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
				epoll_ctl(r.ep, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				on_readable(&r, c);
		}
		t = now_ns();
		check_timeouts(&r, t);
		feed(&r, t);
	}
	/* what never got an answer, or never went out, waited until now */
	int64_t t = now_ns();
	for (int i = 0; i < r.nconn; i++)
		if (r.c[i].busy) {
			r.timeouts++;
			record(&r, (double)(t - r.c[i].due) / 1e6);
		}
	if (r.rate > 0)
		for (uint64_t k = r.next; due_of(&r, k) <= r.end; k++) {
			r.unsent++;
			record(&r, (double)(t - due_of(&r, k)) / 1e6);
		}
	qsort(r.lat, r.nlat, sizeof *r.lat, cmp_d);
	printf("sent=%llu done=%llu window_done=%llu ok=%llu non2xx=%llu errors=%llu timeouts=%llu "
	       "unsent=%llu rate=%.1f p50=%.3f p90=%.3f p99=%.3f p999=%.3f max=%.3f sec=",
	       (unsigned long long)r.sent, (unsigned long long)r.done,
	       (unsigned long long)r.window_done, (unsigned long long)r.ok,
	       (unsigned long long)r.non2xx, (unsigned long long)r.errors,
	       (unsigned long long)r.timeouts, (unsigned long long)r.unsent,
	       (double)r.window_done / secs, pct(r.lat, r.nlat, 50), pct(r.lat, r.nlat, 90),
	       pct(r.lat, r.nlat, 99), pct(r.lat, r.nlat, 99.9), r.nlat ? r.lat[r.nlat - 1] : 0.0);
	for (int s = 0; s < (int)secs; s++)
		printf("%s%llu", s ? "," : "", (unsigned long long)r.per_sec[s]);
	printf("\n");
	for (int i = 0; i < r.nconn; i++)
		if (r.c[i].fd >= 0)
			close(r.c[i].fd);
	return 0;
}
