/*
 * The state directory (state_dir: the snapshot, the pause switch, the control socket, and
 * in the sample the gateway's LMDB cache) made ready before anything uses it. Under
 * systemd, StateDirectory= creates it owned by the service user; run any other way (a
 * container, another supervisor, the foreground) the agent creates it itself, 0750 like
 * the unit's StateDirectoryMode=, when its parent lets this user. When it cannot, the start
 * stops at once with the exact command that makes it, instead of with whatever first trips
 * over it later (a plugin's "cannot create /var/lib/gwsync/cache").
 */
#ifndef GW_STATE_DIR_H
#define GW_STATE_DIR_H

#include "core/error.h"

/* The mode a created state directory gets, whatever the umask (the unit's
 * StateDirectoryMode=0750: a gateway in the agent's group can reach a cache kept inside). */
#define STATE_DIR_MODE 0750

/*
 * 0 when `path` is a directory this process can write in. Missing: with `create` it is
 * made (parents too; the directory itself exactly STATE_DIR_MODE), without (`--check`,
 * which changes nothing) it must be creatable; -1 with err naming the path, the user and
 * the command that makes it when it is not. 1 with the same kind of message when it exists
 * but this user cannot write in it: a warning, not a stop, because a read-only snapshot
 * still bridges an admin outage at start (docs/operations.md, a read-only state_dir).
 */
int state_dir_prepare(const char *path, int create, struct gw_err *err);

#endif
