/*
 * The status endpoint's connection table and descriptor budget (see http_limits.h).
 */
#include "ops/http_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

void http_peer_from(struct http_peer *p, const struct sockaddr *sa, socklen_t len)
{
	memset(p, 0, sizeof *p);
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		p->family = AF_INET;
		memcpy(p->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) { /* one peer, however it arrives */
			p->family = AF_INET;
			memcpy(p->addr, &a6->s6_addr[12], 4);
		} else {
			p->family = AF_INET6;
			memcpy(p->addr, a6, 16);
		}
	}
}

void http_peer_text(const struct http_peer *p, char *buf, size_t cap)
{
	if (!p->family || !inet_ntop(p->family, p->addr, buf, (socklen_t)cap))
		snprintf(buf, cap, "?");
}

/* Called for every held connection when a bound is reached: kept to a few instructions. */
static int same_peer(const struct http_peer *a, const struct http_peer *b)
{
	if (!a->family || a->family != b->family)
		return 0;
	if (a->family == AF_INET) {
		uint32_t x, y;
		memcpy(&x, a->addr, 4);
		memcpy(&y, b->addr, 4);
		return x == y;
	}
	return memcmp(a->addr, b->addr, 16) == 0;
}

void http_conns_init(struct http_conns *t, size_t max, size_t max_per_peer)
{
	memset(t, 0, sizeof *t);
	t->max = max;
	t->max_per_peer = max_per_peer;
}

static void unlink_conn(struct http_conns *t, struct http_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		t->tail = c->prev;
	c->prev = c->next = NULL;
}

static void append(struct http_conns *t, struct http_conn *c)
{
	c->prev = t->tail;
	c->next = NULL;
	if (t->tail)
		t->tail->next = c;
	else
		t->head = c;
	t->tail = c;
}

void http_conns_add(struct http_conns *t, struct http_conn *c, int64_t now_us)
{
	c->active_us = now_us;
	c->leaving = 0;
	append(t, c);
	t->count++;
}

void http_conns_touch(struct http_conns *t, struct http_conn *c, int64_t now_us)
{
	c->active_us = now_us;
	if (t->tail != c) {
		unlink_conn(t, c);
		append(t, c);
	}
}

void http_conns_leave(struct http_conns *t, struct http_conn *c)
{
	if (c->leaving)
		return;
	c->leaving = 1;
	t->count--;
	t->leaving++;
}

void http_conns_remove(struct http_conns *t, struct http_conn *c)
{
	if (c->leaving)
		t->leaving--;
	else
		t->count--;
	unlink_conn(t, c);
}

/* The least recently active connection (of `peer`, or of all when peer is NULL) that is not
 * busy; the least recently active busy one when all are. */
static struct http_conn *oldest(const struct http_conns *t, const struct http_peer *peer,
                                int (*busy)(struct http_conn *c, void *arg), void *arg)
{
	struct http_conn *fallback = NULL;
	for (struct http_conn *c = t->head; c; c = c->next) {
		if (c->leaving || (peer && !same_peer(&c->peer, peer)))
			continue;
		if (!busy || !busy(c, arg))
			return c;
		if (!fallback)
			fallback = c;
	}
	return fallback;
}

struct http_conn *http_conns_victim(const struct http_conns *t, const struct http_peer *peer,
                                    int (*busy)(struct http_conn *c, void *arg), void *arg)
{
	if (!peer)
		return oldest(t, NULL, busy, arg);
	if (t->max_per_peer && peer->family) {
		size_t n = 0;
		for (const struct http_conn *c = t->head; c; c = c->next)
			if (!c->leaving && same_peer(&c->peer, peer))
				n++;
		if (n >= t->max_per_peer)
			return oldest(t, peer, busy, arg);
	}
	if (t->count >= t->max)
		return oldest(t, NULL, busy, arg);
	return NULL;
}

size_t http_fd_budget(size_t want, size_t reserve, char *note, size_t cap)
{
	note[0] = '\0';
	size_t need = want + HTTP_ACCEPT_BURST + reserve;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return want; /* cannot tell: accept() failing is handled anyway */
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rlim_t old = rl.rlim_cur;
		rlim_t to = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		if (to > old) {
			rl.rlim_cur = to;
			if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
				snprintf(note, cap,
				         "raised the open files limit (RLIMIT_NOFILE) from %llu to "
				         "%llu for the status endpoint's connections",
				         (unsigned long long)old, (unsigned long long)to);
			else
				getrlimit(RLIMIT_NOFILE, &rl);
		}
		if (rl.rlim_cur < need) {
			size_t room = rl.rlim_cur > HTTP_ACCEPT_BURST + reserve
			                  ? (size_t)rl.rlim_cur - HTTP_ACCEPT_BURST - reserve
			                  : 0;
			size_t n = room < HTTP_MIN_CONNECTIONS ? HTTP_MIN_CONNECTIONS : room;
			size_t len = strlen(note);
			snprintf(note + len, cap - len,
			         "%sthe open files limit (RLIMIT_NOFILE) is %llu (hard %llu): the "
			         "status endpoint holds at most %zu connections instead of %zu",
			         len ? "; " : "", (unsigned long long)rl.rlim_cur,
			         (unsigned long long)rl.rlim_max, n, want);
			return n;
		}
	}
	return want;
}
