/*
 * What every source shares (see source.h): the names of connection states, so /status
 * shows the same words whatever the protocol, and what the two sources of admin: (long-
 * polling, WebSocket) answer alike: one connection per admin server.
 */
#include "source/source.h"

#include <stdio.h>

const char *source_conn_state_name(enum source_conn_state s)
{
	switch (s) {
	case SOURCE_CONN_POLLING:
		return "polling";
	case SOURCE_CONN_RETRYING:
		return "retrying";
	case SOURCE_CONN_BACKING_OFF:
		return "backing_off";
	case SOURCE_CONN_STOPPED:
		return "stopped";
	case SOURCE_CONN_CONNECTING:
		return "connecting";
	case SOURCE_CONN_CONNECTED:
		return "connected";
	}
	return "?";
}
