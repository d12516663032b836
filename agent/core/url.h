/*
 * Whether a URL as written carries credentials (user[:password]@ before the host). Every
 * configuration check of a server URL asks this first, before any message quotes the URL, so
 * that a password typed into one never reaches an error or a log line. Without "://" (a
 * mistyped scheme such as "http//u:pw@h") every '@' counts: the string is no URL anyway and is
 * refused either way; refusing it without quoting it costs nothing.
 */
#ifndef GW_CORE_URL_H
#define GW_CORE_URL_H

#include <string.h>

static inline int gw_url_has_userinfo(const char *s, size_t len)
{
	const char *end = s + len;
	const char *sep = len >= 3 ? memmem(s, len, "://", 3) : NULL;
	if (!sep)
		return memchr(s, '@', len) != NULL;
	const char *auth = sep + 3;
	const char *slash = memchr(auth, '/', (size_t)(end - auth));
	return memchr(auth, '@', (size_t)((slash ? slash : end) - auth)) != NULL;
}

#endif
