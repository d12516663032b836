/*
 * The text of --plugin-help (see plugin_help.h): one heading line, then one entry per
 * declared option, its type, default or "required", and its help line:
 *
 *   lmdb: keeps every group in an LMDB environment that gateway processes read
 *
 *     path (path, required)
 *         the environment's directory (created with missing parents at the first change)
 */
#include "deliver/plugin_help.h"

#include <dlfcn.h>
#include <limits.h>

#include "deliver/plugin_options.h"
#include "deliver/subscribers.h"

static void write_options(FILE *out, const struct gw_subscriber *d)
{
	const char *name = d->name ? d->name : "?";
	const struct gw_option *opts =
	    d->size >= offsetof(struct gw_subscriber, options) + sizeof d->options ? d->options
	                                                                           : NULL;
	const char *what =
	    d->size >= offsetof(struct gw_subscriber, description) + sizeof d->description
	        ? d->description
	        : NULL;
	fprintf(out, "%s: %s\n", name, what ? what : "(no description)");
	if (!opts) {
		fprintf(out, "\n  (declares no options: its config: is not checked)\n");
		return;
	}
	if (!opts->name)
		fprintf(out, "\n  (no options)\n");
	for (const struct gw_option *o = opts; o->name; o++) {
		const char *type = plugin_option_type_name(o->type);
		fprintf(out, "\n  %s (%s", o->name, type ? type : "?");
		if (o->required)
			fprintf(out, ", required");
		else if (o->def)
			fprintf(out, ", default %s", *o->def ? o->def : "\"\"");
		fprintf(out, ")\n      %s\n", o->help ? o->help : "");
	}
}

int plugin_help_write(FILE *out, const char *library, struct gw_err *err)
{
	char path[PATH_MAX];
	void *dl = NULL;
	int abi = 0;
	const struct gw_subscriber *d = NULL;
	int rc = subscribers_open(library, &dl, &abi, &d, path, sizeof path, err);
	if (rc == 0) {
		if (d)
			write_options(out, d);
		else
			fprintf(
			    out,
			    "%s: built for subscriber ABI %d, which cannot declare options: its "
			    "config: is not checked\n",
			    library, abi);
	}
	if (dl)
		dlclose(dl);
	return rc;
}
