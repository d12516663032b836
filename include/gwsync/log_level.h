/*
 * The log levels of the plugin ABI (struct gw_host's log), part of <gwsync/subscriber.h>,
 * which includes this header: a plugin includes subscriber.h and never needs this one.
 * Alone so that the agent's log (agent/core/log.h) takes its levels without the whole
 * plugin ABI. Frozen like the rest of the ABI.
 */
#ifndef GWSYNC_LOG_LEVEL_H
#define GWSYNC_LOG_LEVEL_H

/** Log levels for gw_host.log. */
enum gw_log_level { GW_LOG_ERROR = 0, GW_LOG_WARN, GW_LOG_INFO, GW_LOG_DEBUG };

#endif /* GWSYNC_LOG_LEVEL_H */
