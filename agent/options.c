/*
 * gwsyncd's command line (see options.h). getopt_long, no globals of our own; the modes
 * are mutually exclusive so a typo like `--once --check` is an error, not a surprise.
 */
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

/* $(sysconfdir)/gwsync/gwsync.yaml, from the build (/etc/gwsync/gwsync.yaml in the packages) */
#ifndef GWSYNC_CONFIG_FILE
#define GWSYNC_CONFIG_FILE "/etc/gwsync/gwsync.yaml"
#endif

const char *options_usage(void)
{
	return "Usage: gwsyncd [-c FILE] [--check | --once [--dry-run] | --pause | --resume | "
	       "--status [ADDR]] [--log-level LEVEL]\n"
	       "       gwsyncd --plugin-help NAME\n"
	       "\n"
	       "Keeps an API gateway's configuration in step with a Soul / Apache ShenYu admin.\n"
	       "\n"
	       "  -c, --config FILE      configuration file (default " GWSYNC_CONFIG_FILE ")\n"
	       "      --check            validate the configuration and load the subscribers, then "
	       "exit\n"
	       "      --once             one full fetch and one delivery to the subscribers, then "
	       "exit\n"
	       "      --dry-run          with --once: print what would change for each group and "
	       "subscriber;\n"
	       "                         deliver and write nothing\n"
	       "      --pause            ask the running agent to stop delivering changes\n"
	       "      --resume           ask the running agent to deliver again\n"
	       "      --status [ADDR]    print the running agent's groups, subscribers and last "
	       "changes,\n"
	       "                         asked at ADDR: its control socket (e.g.\n"
	       "                         STATE_DIR/control.sock) or its status address "
	       "(HOST:PORT,\n"
	       "                         http://HOST:PORT); without ADDR, the control socket "
	       "-c FILE\n"
	       "                         configures\n"
	       "  -l, --log-level LEVEL  error | warn | info | debug (overrides log.level)\n"
	       "      --plugin-help NAME print the options a subscriber plugin declares\n"
	       "  -V, --version          print the version and exit\n"
	       "  -h, --help             print this help and exit\n"
	       "\n"
	       "Exit codes: 0 success or clean stop; 1 runtime failure (--pause, --resume, "
	       "--status: "
	       "no agent\n"
	       "answered); 2 configuration error.\n";
}

int options_parse(int argc, char **argv, struct options *out, struct gw_err *err)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"check", no_argument, NULL, 'k'},
	    {"once", no_argument, NULL, 'o'},
	    {"pause", no_argument, NULL, 'p'},
	    {"resume", no_argument, NULL, 'r'},
	    {"status", no_argument, NULL, 's'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {"plugin-help", required_argument, NULL, 'P'},
	    {"dry-run", no_argument, NULL, 'n'},
	    {NULL, 0, NULL, 0},
	};
	memset(out, 0, sizeof *out);
	out->config_path = GWSYNC_CONFIG_FILE;
	out->log_level = -1;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":c:l:Vh", longopts, NULL)) != -1) {
		enum gw_mode m = MODE_RUN;
		switch (c) {
		case 'c':
			out->config_path = optarg;
			continue;
		case 'n':
			out->dry_run = 1;
			continue;
		case 'l':
			out->log_level = gw_log_level_parse(optarg);
			if (out->log_level < 0) {
				return gw_errf(
				    err,
				    "--log-level: unknown level '%s' (error, warn, info, debug)",
				    optarg);
			}
			continue;
		case 'k':
			m = MODE_CHECK;
			break;
		case 'o':
			m = MODE_ONCE;
			break;
		case 'p':
			m = MODE_PAUSE;
			break;
		case 'r':
			m = MODE_RESUME;
			break;
		case 's':
			m = MODE_STATUS;
			break;
		case 'V':
			m = MODE_VERSION;
			break;
		case 'h':
			m = MODE_HELP;
			break;
		case 'P':
			m = MODE_PLUGIN_HELP;
			out->plugin = optarg;
			break;
		case ':':
			return gw_errf(err, "%s needs an argument", argv[optind - 1]);
		default:
			return gw_errf(err, "unknown option '%s'", argv[optind - 1]);
		}
		if (out->mode != MODE_RUN && out->mode != m && m != MODE_HELP &&
		    out->mode != MODE_HELP) {
			return gw_errf(err, "%s cannot be combined with another mode",
			               argv[optind - 1]);
		}
		if (out->mode != MODE_HELP)
			out->mode = m;
	}
	/* --status ADDR: the one operand it takes (getopt moved it past the options) */
	if (out->mode == MODE_STATUS && optind == argc - 1)
		out->status_addr = argv[optind++];
	if (optind < argc) {
		return gw_errf(err, "unexpected argument '%s'", argv[optind]);
	}
	if (out->dry_run && out->mode != MODE_ONCE && out->mode != MODE_HELP) {
		return gw_errf(err, "--dry-run goes with --once (gwsyncd --once --dry-run)");
	}
	return 0;
}
