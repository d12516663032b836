/*
 * Polaris's answers to GetConfigFile and WatchConfigFile: protobuf-JSON of
 * ConfigClientResponse (polarismesh/specification config_file_response.proto), written by
 * the server's jsonpb marshaler with EmitDefaults (apiserver/httpserver/utils/handler.go):
 *   {"code": 200000, "info": "execute success",
 *    "configFile": {"namespace": .., "group": .., "fileName": .., "content": ..,
 *                   "version": "7", "md5": .., ...}}
 * code is a UInt32Value (a JSON number); version a UInt64Value (a JSON string of digits;
 * a number is accepted too); an unset wrapper is null. The HTTP status is code / 1000, so
 * a not-found file comes with HTTP 400 and the body decides, not the status.
 *
 * Parsed with jansson, which refuses invalid UTF-8, duplicate keys (asked for), and nesting
 * deeper than its limit: each such body is a clear parse error, never a half-read reply.
 */
#ifndef GW_POLARIS_REPLY_H
#define GW_POLARIS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* The codes the source acts on (specification api/v1/model/code.proto). */
#define POLARIS_EXECUTE_SUCCESS    200000u
#define POLARIS_DATA_NO_CHANGE     200001u
#define POLARIS_NOT_FOUND_RESOURCE 400202u

struct polaris_reply {
	uint32_t code;
	char info[256];  /* the server's words ("" if null) */
	int has_file;    /* configFile is an object */
	char *file_name; /* configFile.fileName; NULL if null or absent */
	size_t file_name_len;
	char *content; /* configFile.content; NULL if null or absent */
	size_t content_len;
	uint64_t version; /* configFile.version; 0 if null or absent */
};

/* Parse body[0..len). 0, or -1 with err ("not JSON: ... at byte N", "code is not a
 * number", ...). The reply owns copies of its strings: polaris_reply_free(). */
int polaris_reply_parse(const char *body, size_t len, struct polaris_reply *out,
                        struct gw_err *err);
void polaris_reply_free(struct polaris_reply *r);

/* 1 for the codes of a refused token or permission (401xxx, 403xxx). */
int polaris_code_is_auth(uint32_t code);

#endif
