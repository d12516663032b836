/*
 * The status page at GET / (agent/ops/page/status.html, embedded at build time): the
 * template with the agent's state rendered into it as HTML, so it reads without JavaScript,
 * and the Content-Security-Policy that lets it run its one inline script and style (by
 * their SHA-256) and nothing else. The renderer takes the same two documents the page's
 * script fetches, /status and /history, so both draw one picture from one source; it is a
 * pure function, unit-tested without a socket.
 */
#ifndef GW_STATUS_PAGE_H
#define GW_STATUS_PAGE_H

#include <jansson.h>
#include <stddef.h>

#define STATUS_PAGE_TIMELINE 50 /* changes on the page, newest first */

/* The template as built in (generated from page/status.html). */
extern const char status_page_html[];

/* The page for the documents of GET /status and GET /history (history may be NULL).
 * 0 and a malloc'd *out of *len bytes, or -1 on out of memory. */
int status_page_render(const json_t *status, const json_t *history, char **out, size_t *len);

/* The Content-Security-Policy value for the page, into buf. 0, or -1 if the template has no
 * <script> or <style> (a broken build) or buf is too small. */
int status_page_csp(char *buf, size_t cap);

#endif
