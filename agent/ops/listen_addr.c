/*
 * status.listen parsing (see listen_addr.h). Pure string work: no resolution happens here,
 * the server resolves with getaddrinfo() and libcurl does its own for the client.
 */
#include "ops/listen_addr.h"

#include <stdio.h>
#include <string.h>

int listen_addr_parse(const char *text, struct listen_addr *out, struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	if (!text || !*text)
		return gw_errf(err, "status.listen: empty address");
	const char *colon = strrchr(text, ':');
	if (!colon || colon == text)
		return gw_errf(err, "status.listen '%.100s': expected HOST:PORT", text);
	const char *host = text;
	size_t host_len = (size_t)(colon - text);
	if (text[0] == '[') {
		if (host_len < 3 || colon[-1] != ']')
			return gw_errf(err, "status.listen '%.100s': expected [IPv6]:PORT", text);
		host++;
		host_len -= 2;
		out->ipv6 = 1;
	} else if (memchr(text, ':', host_len)) {
		return gw_errf(err, "status.listen '%.100s': an IPv6 address needs brackets", text);
	}
	if (host_len >= sizeof out->host)
		return gw_errf(err, "status.listen '%.100s': host name too long", text);
	const char *port = colon + 1;
	size_t plen = strlen(port);
	unsigned long n = 0;
	if (plen == 0 || plen > 5 || strspn(port, "0123456789") != plen)
		return gw_errf(err, "status.listen '%.100s': bad port", text);
	for (size_t i = 0; i < plen; i++)
		n = n * 10 + (unsigned long)(port[i] - '0');
	if (n < 1 || n > 65535)
		return gw_errf(err, "status.listen '%.100s': port must be 1 to 65535", text);
	memcpy(out->host, host, host_len);
	out->host[host_len] = '\0';
	snprintf(out->port, sizeof out->port, "%lu", n);
	return 0;
}

void listen_addr_url(const struct listen_addr *a, char *url, size_t cap)
{
	const char *host = a->host;
	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	if (a->ipv6)
		snprintf(url, cap, "http://[%s]:%s", host, a->port);
	else
		snprintf(url, cap, "http://%s:%s", host, a->port);
}
