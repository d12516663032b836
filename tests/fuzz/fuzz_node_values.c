/*
 * libFuzzer target: the values ShenYu's node layout holds as the node map reads them
 * (source/node/node.c): the input is lines "KEY=VALUE" applied in order as key changes to
 * one map in the node layout and one in the whole-group layout, so list values (JSON arrays
 * of ids), whole-group documents and items reach the parsers, and list changes add and
 * remove members in any order. The maps and their store live for the whole run, as a
 * source's do. Any crash, leak or sanitizer report is a bug; the input that found it goes
 * into tests/fuzz/regress/node_values/ and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "source/node/node.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum gw_group groups[] = {
    GW_GROUP_PLUGIN,
    GW_GROUP_SELECTOR,
    GW_GROUP_RULE,
    GW_GROUP_APP_AUTH,
    GW_GROUP_META_DATA,
    GW_GROUP_PROXY_SELECTOR,
    GW_GROUP_DISCOVER_UPSTREAM,
};

static struct node_map *map_of(enum node_layout layout)
{
	static struct gw_log *log;
	static struct store *st;
	static struct ingest *in;
	struct gw_err err;
	if (!log) {
		gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err);
		st = store_new();
		in = ingest_new(st, log);
	}
	struct node_args a = {layout, "ns.", NULL, 1, groups, 7, in, log, "fuzz", "fuzz://", 10};
	return node_new(&a, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct node_map *maps[2];
	if (!maps[0]) {
		maps[0] = map_of(NODE_LAYOUT_NODES);
		maps[1] = map_of(NODE_LAYOUT_WHOLE);
	}
	static int64_t now;
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(line_end - p));
		if (eq) {
			for (int i = 0; i < 2; i++)
				node_put(maps[i], p, (size_t)(eq - p), eq + 1,
				         (size_t)(line_end - eq - 1), NULL, now);
		}
		now += 7;
		p = line_end + 1;
	}
	for (int i = 0; i < 2; i++)
		node_flush(maps[i], now += 1000, 1);
	return 0;
}
