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
 * (RULE.json). 0 and *out (one reference), or -1 with err naming the file. */
int replay_read_doc(const char *path, struct group_data **out, struct gw_err *err);

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
