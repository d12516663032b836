/*
 * What the Polaris source sends: the GetConfigFile URL path and the WatchConfigFile body
 * (apiserver/httpserver/config/client_access.go; the body is protobuf-JSON of
 * ClientWatchConfigFileRequest, whose field names the server's jsonpb reads as written in
 * the .proto: watch_files, file_name; a UInt64Value version as a JSON string). Pure
 * functions over a strbuf, so the exact bytes are unit-tested without a server; the watch
 * body of 100,000 keys is built by appending, without a JSON library.
 */
#ifndef GW_POLARIS_WIRE_H
#define GW_POLARIS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "shared/strbuf.h"

/* "/config/v1/GetConfigFile?namespace=NS&group=G&fileName=F&version=0", each value
 * percent-encoded. Version 0: the server answers with the release whatever it is. */
int polaris_get_path(struct strbuf *b, const char *ns, const char *group, const char *file,
                     size_t file_len);

/* {"watch_files":[{"namespace":NS,"group":G,"file_name":F,"version":"V"   },...]}:
 * begin, one add per file (V: the release version held, 0 for none), end. The version
 * takes a fixed POLARIS_VERSION_FIELD bytes (the digits, the closing quote, then spaces,
 * which JSON allows), so a change of one file's version is patched in place
 * (polaris_watch_patch) instead of building the body of 100,000 files again; *at (may be
 * NULL) is where the field starts in b. */
#define POLARIS_VERSION_FIELD 21
int polaris_watch_begin(struct strbuf *b);
int polaris_watch_add(struct strbuf *b, const char *ns, const char *group, const char *file,
                      size_t file_len, uint64_t version, size_t *at);
int polaris_watch_end(struct strbuf *b);
/* Write version into the field at body + at (as polaris_watch_add left it). */
void polaris_watch_patch(char *body, size_t at, uint64_t version);

/* s[0..len) as a JSON string, quotes included: '"', '\\' and control characters escaped,
 * other bytes as they are. */
int polaris_json_string(struct strbuf *b, const char *s, size_t len);

#endif
