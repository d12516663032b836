/*
 * What the kit's two files share beyond the public header (include/gwsync/testing.h): a
 * change built with or without the typed views, so an instance delivers to a plugin that
 * declared GW_SUB_TYPED_ON_DEMAND what the agent delivers to it (no view made for it),
 * and the plugin's flags as the agent reads them.
 * Hidden like everything in the library but the gwt_ functions marked GWSYNC_EXPORT.
 */
#ifndef GWSYNC_SDK_TESTING_KIT_H
#define GWSYNC_SDK_TESTING_KIT_H

#include <gwsync/testing.h>

/* gwt_change_between(), making every item's typed view first when `typed` is 1 (as the
 * agent does for a plugin that reads them all), none when 0 (for one that asks through
 * host->item_typed()). */
struct gwt_change *kit_change_build(const struct gwt_version *from, const struct gwt_version *to,
                                    int typed, char *err, size_t cap);

/* The plugin's GW_SUB_* flags, read only when its description's size covers them, as the
 * agent reads them. */
unsigned kit_desc_flags(const struct gw_subscriber *desc);

#endif
