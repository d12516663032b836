/*
 * The group document: one group version as a file,
 *   {"group": "RULE", "md5": "...", "lastModifyTime": N, "data": [items as the admin sent them]}
 * written by the snapshot (state_dir) and by the file plugin alike, so an operator reads
 * both the same way and the agent's loader (model_parse_group) reads either. Depends on
 * libc and the plugin ABI header only, so the file plugin compiles it in.
 */
#ifndef GW_GROUPDOC_H
#define GW_GROUPDOC_H

#include <gwsync/subscriber.h>
#include <stdint.h>
#include <stdio.h>

/* Write the document to fp; errors show in ferror(fp) (atomic_file_finish reports them). */
void groupdoc_write(FILE *fp, const char *group, const char *md5, int64_t last_modify_time,
                    const struct gw_item *const *items, size_t n_items);

/* The same with item i's raw JSON from json_at(arg, i, &len) (for a reader of
 * host->change_item, or of items that are not gw_items). 0, or -1 when json_at returned
 * NULL (the document is then incomplete: do not commit it). */
int groupdoc_write_each(FILE *fp, const char *group, const char *md5, int64_t last_modify_time,
                        size_t n_items, const char *(*json_at)(void *arg, size_t i, size_t *len),
                        void *arg);

#endif
