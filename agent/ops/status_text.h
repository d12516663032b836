/*
 * `gwsyncd --status`: the running agent's state as lines for a terminal, like `systemctl
 * status`: the agent and its health, the source and each connection, one line per group
 * (version, age, where it came from), one per subscriber (in step, or behind on which group
 * and why), whether delivery is paused, and the last changes. Rendered from what the control
 * socket answers to "status" (ops/control.h): {"status": the /status document, "history":
 * the /history document}, so the terminal, the page and the JSON say the same. A pure
 * function of that document and the time, unit-tested on hand-made documents. Text from
 * outside (keys, errors, URLs) has its control characters escaped: it cannot move the
 * cursor or forge a line.
 */
#ifndef GW_STATUS_TEXT_H
#define GW_STATUS_TEXT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#define STATUS_TEXT_CHANGES 10 /* the last changes shown */

/* Write the summary of `reply` to out. 0, or -1 if reply is not such a document. */
int status_text_render(const json_t *reply, int64_t now_ms, FILE *out);

#endif
