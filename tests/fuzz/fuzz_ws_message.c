/*
 * libFuzzer target: a WebSocket text message from the admin, as the WebSocket source reads
 * it: the envelope (source/websocket/message.c), the items of a data message
 * (model_parse_items) and the patch each event builds from a held version
 * (model/patch.c). Any crash, leak or sanitizer report is a bug; the input that found it
 * goes into tests/fuzz/regress/ws_message/ and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/patch.h"
#include "source/websocket/message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_msg m;
	struct gw_err err;
	if (ws_msg_parse((const char *)data, size, &m, &err) != 0 || m.kind != WS_MSG_DATA)
		return 0;
	struct group_data *batch;
	enum gw_group g = (enum gw_group)m.group;
	if (model_parse_items(g, m.data, m.data_len, "fuzz", NULL, &batch, &err) != 0)
		return 0;
	/* as a full list, then every way an event changes it */
	struct patch p = {g, NULL, batch, NULL, 0, 1, 0, "fuzz", 1};
	struct group_data *v1 = NULL, *v2 = NULL;
	if (model_patch(&p, &v1, &err) == 0 && v1) {
		const char *dels[4] = {NULL};
		char keys[4][4096];
		size_t n = 0;
		for (size_t i = 0; i < batch->n_items && n < 4; i += 2, n++)
			dels[n] = gd_key_str(&batch->items[i], keys[n], sizeof keys[n]);
		struct patch q = {g, v1, batch, dels, n, 0, 0, "fuzz", 0};
		if (model_patch(&q, &v2, &err) == 0)
			group_data_unref(v2);
		struct patch r = {g, v1, NULL, dels, n, 0, 1, "fuzz", 0};
		if (model_patch(&r, &v2, &err) == 0)
			group_data_unref(v2);
		struct group_data *again;
		if (model_parse_items(g, m.data, m.data_len, "fuzz", v1, &again, &err) == 0)
			group_data_unref(again);
	}
	group_data_unref(v1);
	group_data_unref(batch);
	return 0;
}
