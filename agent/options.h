/*
 * Command-line options of gwsyncd. Parsing is separate from main.c so it can be unit
 * tested and so main.c reads as the daemon's lifecycle only.
 */
#ifndef GW_OPTIONS_H
#define GW_OPTIONS_H

enum gw_mode {
	MODE_RUN = 0, /* foreground daemon */
	MODE_CHECK,   /* validate configuration, load subscribers, exit */
	MODE_ONCE,    /* one full fetch and delivery, exit */
	MODE_PAUSE,   /* ask the running agent to pause delivery */
	MODE_RESUME,  /* ... and to resume */
	MODE_STATUS,  /* print the running agent's state (the control socket) */
	MODE_VERSION,
	MODE_HELP,
	MODE_PLUGIN_HELP, /* print a plugin's declared options */
};

struct gw_err;

struct options {
	enum gw_mode mode;
	const char *config_path;
	int log_level;           /* -1: from the configuration */
	const char *plugin;      /* --plugin-help NAME */
	int dry_run;             /* --once --dry-run: show what would change, change nothing */
	const char *status_addr; /* --status ADDR: control socket or status address, no -c */
};

/* 0 on success; -1 with the message in err (usage error, exit code 2). */
int options_parse(int argc, char **argv, struct options *out, struct gw_err *err);

/* The --help text. */
const char *options_usage(void);

#endif
