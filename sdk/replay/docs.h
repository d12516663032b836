/*
 * gwsync-replay's input: group documents, the format the `file` plugin and the snapshot
 * write ({"group": "RULE", "md5": .., "lastModifyTime": .., "data": [..]}), read with the
 * agent's own model so the plugin sees exactly the items the agent would hand it.
 */
#ifndef GW_REPLAY_DOCS_H
#define GW_REPLAY_DOCS_H

#include <stddef.h>

#include "core/error.h"
#include "model/groupdata.h"

/* One document file: its group from the "group" member, else from the file's name
 * (RULE.json). 0 and *out (one reference), or -1 with err naming the file.
 *
 * A GROUP.json with a GROUP.journal beside it is an agent's snapshot (a state_dir): the
 * journal holds the versions accepted after the file was written, so the version is read
 * as the agent's cold start reads it, by the agent's own code (store/snapshot.h: the file,
 * then every journal record that applies; a torn or stale tail is ignored, as there). `note`
 * (cap bytes, "" when there is no journal) then says what was applied and what ignored. */
int replay_read_doc(const char *path, struct group_data **out, char *note, size_t cap,
                    struct gw_err *err);

/* The group of one document file, read the same way, without parsing its items (for the
 * groups the replay reports as synced). The group, or -1 with err naming the file. */
int replay_doc_group(const char *path, struct gw_err *err);

/*
 * The paths to play for one command-line argument: the file itself, or for a directory
 * (a snapshot's state_dir or a `file` plugin's dir) every GROUP.json in it, in delivery
 * order (PLUGIN, SELECTOR, RULE, then the rest). *paths is malloc'ed, each entry too;
 * free with replay_free_paths(). 0 or -1 with err.
 */
int replay_expand(const char *arg, char ***paths, size_t *n, struct gw_err *err);
void replay_free_paths(char **paths, size_t n);

#endif
