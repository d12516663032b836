/*
 * `gwsyncd --once --dry-run`: what a sync would change, shown and not done (as `confd
 * -noop` and `consul-template -dry` do). The fetched versions are compared with what the
 * subscribers last accepted, which is what the snapshot in state_dir holds while they are
 * in step (the running agent delivers exactly this delta; `--once` itself re-delivers every
 * group whole, as after any start). Nothing is delivered, loaded or written.
 */
#ifndef GW_DRYRUN_H
#define GW_DRYRUN_H

#include <stdio.h>

#include "config/config.h"
#include "core/error.h"
#include "store/store.h"

/* Print per configured group the version change and the added, updated and removed keys,
 * then per subscriber the groups it would receive. Returns the number of groups that would
 * change, or -1 with err (a snapshot that cannot be read). */
int dryrun_report(const struct cfg *cfg, struct store *st, FILE *out, struct gw_err *err);

#endif
