/*
 * Hand-made status views for the tests of /status, /metrics, health and readiness: the
 * renderers are pure functions of a view, so a test states exactly what the agent knows
 * (servers, held groups, what each subscriber has) and checks exactly what comes out.
 */
#ifndef GW_VIEWTEST_H
#define GW_VIEWTEST_H

#include <stddef.h>
#include <stdint.h>

#include "ops/status_view.h"

#define VT_WALL_MS    1700000100000LL /* the view's "now" */
#define VT_STARTED_MS 1700000000000LL /* 100 s earlier */

/*
 * A view of an agent configured with the five classic groups (PLUGIN, SELECTOR, RULE,
 * APP_AUTH, META_DATA in that order), n_servers running pollers (urls "http://a:9095",
 * "http://b:9095", ...; state polling, no counts), a live dispatcher with n_subs
 * subscribers named "sub0", "sub1"... (plugin "recorder") that hold nothing, not paused,
 * no group held. Free with status_view_free().
 */
void vt_init(struct status_view *v, size_t n_servers, size_t n_subs);

/* Make the view hold `n_items` items of group g at md5/lmt, received `age_ms` before the
 * view's time; provisional = loaded from the snapshot. */
void vt_hold(struct status_view *v, enum gw_group g, const char *md5, int64_t lmt, size_t n_items,
             int provisional, int64_t age_ms);

/* Hold all five classic groups (md5 "m-GROUP", lmt 1000, 2 items). */
void vt_hold_all(struct status_view *v);

/* Subscriber i accepted group g at md5 (lmt, items, delivered at wall ms). */
void vt_delivered(struct status_view *v, size_t i, enum gw_group g, const char *md5, int64_t lmt,
                  size_t n_items, int64_t wall_ms);

/* Subscriber i accepted every held group's current version. */
void vt_all_delivered(struct status_view *v, size_t i);

/* Subscriber i rejected group g `n` times in a row with `why`. */
void vt_failed(struct status_view *v, size_t i, enum gw_group g, unsigned n, const char *why);

#endif
