/*
 * The envelope of an admin's WebSocket message (see message.h), walked member by member
 * with jspan; every scalar member goes through jansson, so each byte of the envelope is
 * checked, and the data array is checked by the model when its items are parsed.
 */
#include "source/websocket/message.h"

#include <gwsync/subscriber.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/jspan.h"
#include "model/groups.h"

static const char *const event_names[] = {"CREATE", "UPDATE", "DELETE", "REFRESH", "MYSELF"};

const char *ws_event_name(enum ws_event e)
{
	return (unsigned)e < sizeof event_names / sizeof event_names[0] ? event_names[e] : "?";
}

static int set_name(char *dst, size_t cap, const json_t *v)
{
	if (!json_is_string(v))
		return -1;
	snprintf(dst, cap, "%s", json_string_value(v));
	return 0;
}

int ws_msg_parse(const char *text, size_t len, struct ws_msg *m, struct gw_err *err)
{
	memset(m, 0, sizeof *m);
	m->group = -1;
	m->is_master = 1;
	const char *end = text + len;
	struct jspan_iter it;
	struct jspan_member mem;
	int r, have_event = 0, have_group = 0;
	const char *data = NULL;
	size_t data_len = 0;
	if (jspan_object_begin(&it, jspan_ws(text, end), end) != 0)
		return gw_errf(err, "not a JSON object");
	while ((r = jspan_object_next(&it, &mem)) == 1) {
		if (jspan_key_is(&mem, "data") == 1) {
			if (data)
				return gw_errf(err, "duplicate key 'data'");
			data = mem.value;
			data_len = mem.value_len;
			continue;
		}
		json_error_t je;
		json_t *v = json_loadb(mem.value, mem.value_len, JSON_DECODE_ANY, &je);
		if (!v)
			return gw_errf(err, "invalid JSON at column %d: %s",
			               (int)(mem.value - text) + je.column, je.text);
		int bad = 0;
		if (jspan_key_is(&mem, "groupType") == 1) {
			bad = have_group++ || set_name(m->group_name, sizeof m->group_name, v);
		} else if (jspan_key_is(&mem, "eventType") == 1) {
			bad = have_event++ || set_name(m->event_name, sizeof m->event_name, v);
		} else if (jspan_key_is(&mem, "isMaster") == 1) {
			bad = !json_is_boolean(v);
			m->is_master = !json_is_false(v);
		} else if (jspan_key_is(&mem, "runningMode") == 1) {
			bad = !json_is_string(v);
			m->cluster = !bad && strcmp(json_string_value(v), "CLUSTER") == 0;
		} else if (jspan_key_is(&mem, "masterUrl") == 1) {
			bad = !json_is_null(v) && set_name(m->master_url, sizeof m->master_url, v);
		}
		json_decref(v);
		if (bad)
			return gw_errf(err, "member '%.*s' is duplicated or of the wrong type",
			               (int)(mem.key_len > 40 ? 40 : mem.key_len), mem.key);
	}
	if (r < 0 || jspan_ws(it.p, end) != end)
		return gw_errf(err, "invalid JSON (malformed or truncated object)");
	if (!have_event)
		return gw_errf(err, "no 'eventType'");
	if (strcmp(m->event_name, "RUNNING_MODE") == 0) {
		m->kind = WS_MSG_RUNNING_MODE;
		return 0;
	}
	for (int g = 0; have_group && g < GW_GROUP_COUNT; g++)
		if (strcmp(m->group_name, gw_group_name((enum gw_group)g)) == 0)
			m->group = g;
	int ev = -1;
	for (int e = 0; e < (int)(sizeof event_names / sizeof event_names[0]); e++)
		if (strcmp(m->event_name, event_names[e]) == 0)
			ev = e;
	if (!have_group)
		return gw_errf(err, "no 'groupType'");
	if (m->group < 0 || ev < 0) {
		m->kind = WS_MSG_IGNORED;
		return 0;
	}
	m->event = (enum ws_event)ev;
	if (!data || *data != '[')
		return gw_errf(err, "group %s: 'data' must be an array", m->group_name);
	m->kind = WS_MSG_DATA;
	m->data = data;
	m->data_len = data_len;
	return 0;
}
