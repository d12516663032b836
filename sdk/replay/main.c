/*
 * gwsync-replay: drive one subscriber plugin with recorded group documents, no admin and no
 * agent needed. It loads the plugin as gwsyncd does (the same loader, the same check of
 * its declared options, the same host table), then hands it one change per document: the
 * delta from what the plugin last accepted, exactly as the dispatcher builds it, printing
 * each change and the plugin's verdict.
 *
 *   gwsync-replay [-c CONFIG.yaml] [--groups LIST] [--fail N] [--repeat N] [--threaded]
 *                 PLUGIN DOC|DIR...
 *
 * Only sequences the agent could deliver are played: the agent never hands a plugin the
 * version it was handed before (same md5) again, and never a version older than the last
 * (the store keeps the newest). So a document whose md5 is the one played before it in its
 * group is skipped, and one whose lastModifyTime is not newer (documents out of order, or
 * --repeat starting over) is delivered with the time raised past the last, as the admin
 * would stamp the same data served again; both are said on stdout.
 *
 * Exit status: 0 every change was accepted (at the latest on its retry), 1 some change
 * stayed rejected, 2 a usage, configuration or loading error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "config/ytree.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "deliver/subscribers.h"
#include "docs.h"
#include "model/diff.h"
#include "model/abi.h"
#include "model/groups.h"

struct replay {
	struct subscriber *s;
	char **docs;
	size_t n_docs;
	long repeat;
	long fail_at; /* 0: none */
	int quiet;
	long count;
	int64_t tick_at;
	int rejected; /* a change stayed rejected */
	int error;    /* a document could not be read */
	struct group_data *accepted[GW_GROUP_COUNT];
	/* the last version played per group: what the agent's store would hold */
	int played[GW_GROUP_COUNT];
	char played_md5[GW_GROUP_COUNT][65];
	int64_t played_lmt[GW_GROUP_COUNT];
	int synced[GW_GROUP_COUNT]; /* the groups the plugin is told the agent syncs */
};

static const char usage[] =
    "Usage: gwsync-replay [options] PLUGIN DOCUMENT|DIRECTORY...\n"
    "\n"
    "Loads the subscriber plugin PLUGIN (a name found like gwsyncd finds it, or a path) and\n"
    "hands it one change per group document: the delta from what it last accepted, as the\n"
    "agent delivers it. A DOCUMENT is a file in the format the `file` plugin and the agent's\n"
    "snapshot write ({\"group\",\"md5\",\"lastModifyTime\",\"data\":[...]}); a DIRECTORY is "
    "played\n"
    "as all its GROUP.json files in delivery order (PLUGIN, SELECTOR, RULE, then the rest).\n"
    "\n"
    "  -c, --config FILE   the plugin's config: map, in YAML (checked against its declared\n"
    "                      options like gwsyncd --check does); default: empty\n"
    "  -n, --name NAME     the instance name (default: replay)\n"
    "  -g, --groups LIST   the groups the agent syncs, as in admin.groups (comma-separated):\n"
    "                      what host->group_configured() answers; default: the groups of the\n"
    "                      documents given. A document of another group is an error.\n"
    "      --fail N        inject a failure: the N-th apply() counts as rejected whatever it\n"
    "                      returns (as if it failed half-way); it is retried like the agent\n"
    "                      retries, from the version last accepted\n"
    "      --repeat N      play the documents N times over (default 1)\n"
    "      --threaded      the agent's threading: init() and fini() on the main thread,\n"
    "                      apply() and tick() on a second one\n"
    "  -q, --quiet         one line per change, no item lines\n"
    "  -v, --verbose       the plugin's debug lines too\n"
    "  -h, --help          this help\n"
    "\n"
    "Only what the agent could deliver is played: a document with the md5 of the one played\n"
    "before it in its group is skipped (the agent never delivers a version twice), and one\n"
    "whose lastModifyTime is not newer than that one's (out of order, or --repeat starting\n"
    "over) is delivered with the time raised past it (the agent never goes back in time).\n"
    "\n"
    "Exit status: 0 every change accepted (at the latest on its retry), 1 a change stayed\n"
    "rejected, 2 a usage, configuration or loading error.\n";

static void print_items(const char *mark, const struct gw_item *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("  %s %s%s%s%s\n", mark, v[i]->key, v[i]->name ? " (" : "",
		       v[i]->name ? v[i]->name : "", v[i]->name ? ")" : "");
}

static void run_due_tick(struct replay *r)
{
	if (r->tick_at >= 0 && gw_mono_ms() >= r->tick_at)
		r->tick_at = subscriber_tick(r->s, gw_mono_ms());
}

/* One delivery of `to`; 0 accepted (and recorded), -1 rejected. `note` ends the summary. */
static int deliver(struct replay *r, struct group_data *to, const char *label, const char *note)
{
	enum gw_group g = to->group;
	struct diff d;
	struct abi_change ac;
	struct gw_err err;
	/* every list made (the summary prints them), typed views for a plugin that reads them */
	if (diff_build(&d, g, r->accepted[g], to, &err) < 0 ||
	    abi_change_make(&ac, &d, r->accepted[g], to, 1, r->s->typed, &err) != 0) {
		diff_free(&d);
		fprintf(stderr, "gwsync-replay: %s\n", err.msg);
		r->error = 1;
		return -1;
	}
	const struct gw_change *c = &ac.change;
	long n = ++r->count;
	struct gw_err why = {0};
	run_due_tick(r);
	int rc = subscriber_apply(r->s, c, NULL, &why);
	int injected = n == r->fail_at;
	printf("#%ld %s%s %s <- %s: %zu items, +%zu ~%zu -%zu%s%s%s: ", n, label, c->group_name,
	       c->version.md5, c->previous.md5 ? c->previous.md5 : "nothing", c->n_items,
	       c->n_added, c->n_updated, c->n_removed, c->stale ? ", stale" : "",
	       c->confirmed_only ? ", confirmed only" : "", note);
	if (rc != 0)
		printf("rejected: %s\n", why.msg);
	else if (injected)
		printf("accepted, counted as rejected (--fail %ld)\n", r->fail_at);
	else
		printf("accepted\n");
	if (!r->quiet) {
		print_items("+", c->added, c->n_added);
		for (size_t i = 0; i < c->n_updated; i++)
			print_items("~", &c->updated[i].new_item, 1);
		print_items("-", c->removed, c->n_removed);
	}
	fflush(stdout);
	abi_change_free(&ac);
	diff_free(&d);
	r->tick_at = subscriber_tick(r->s, gw_mono_ms());
	if (rc != 0 || injected)
		return -1;
	group_data_unref(r->accepted[g]);
	r->accepted[g] = group_data_ref(to);
	return 0;
}

static void play(struct replay *r)
{
	for (long rep = 0; rep < r->repeat && !r->error; rep++)
		for (size_t i = 0; i < r->n_docs && !r->error; i++) {
			struct group_data *gd = NULL;
			struct gw_err err;
			char jnote[600];
			if (replay_read_doc(r->docs[i], &gd, jnote, sizeof jnote, &err) < 0) {
				fprintf(stderr, "gwsync-replay: %s\n", err.msg);
				r->error = 1;
				break;
			}
			if (jnote[0])
				printf("-- %s %s: %s\n", gw_group_name(gd->group), gd->md5, jnote);
			enum gw_group g = gd->group;
			if (!r->synced[g]) {
				fprintf(stderr,
				        "gwsync-replay: %s: group %s is not in --groups: the agent "
				        "would never deliver it\n",
				        r->docs[i], gw_group_name(g));
				r->error = 1;
				group_data_unref(gd);
				break;
			}
			if (r->played[g] && strcmp(r->played_md5[g], gd->md5) == 0) {
				printf("-- %s %s: skipped: the md5 of the version played before it "
				       "(the "
				       "agent never delivers a version twice)\n",
				       gw_group_name(g), gd->md5);
				group_data_unref(gd);
				continue;
			}
			char note[160] = "";
			if (r->played[g] && gd->last_modify_time <= r->played_lmt[g]) {
				snprintf(note, sizeof note,
				         ", lastModifyTime raised from %lld to %lld",
				         (long long)gd->last_modify_time,
				         (long long)r->played_lmt[g] + 1);
				gd->last_modify_time = r->played_lmt[g] + 1;
			}
			r->played[g] = 1;
			snprintf(r->played_md5[g], sizeof r->played_md5[g], "%s", gd->md5);
			r->played_lmt[g] = gd->last_modify_time;
			/* A rejected change is retried once, as the agent does after its backoff:
			 * again from the version last accepted. */
			if (deliver(r, gd, "", note) < 0 && !r->error &&
			    deliver(r, gd, "retry ", note) < 0)
				r->rejected = 1;
			group_data_unref(gd);
		}
	/* Deferred work the plugin asked for (a debounced reload) runs before fini(). */
	for (int rounds = 0; r->tick_at >= 0 && rounds < 100; rounds++) {
		int64_t wait = r->tick_at - gw_mono_ms();
		if (wait > 0) {
			struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000};
			nanosleep(&ts, NULL);
		}
		r->tick_at = subscriber_tick(r->s, gw_mono_ms());
	}
}

static void *play_thread(void *arg)
{
	play(arg);
	return NULL;
}

/* The plugin's config: map: the YAML file, or an empty map. */
static struct ynode *load_config(const char *path, struct gw_err *err)
{
	struct ynode *root = NULL;
	if (!path)
		return ytree_new_map("(no -c FILE)", 1, 1);
	if (ytree_parse_file(path, &root, err) < 0)
		return NULL;
	if (root->type != YNODE_MAP) {
		gw_errf(err, "%s:%d:%d: expected the plugin's config: map, got %s", path,
		        root->line, root->col, ytree_type_name(root));
		ytree_free(root);
		return NULL;
	}
	return root;
}

/* The groups the plugin is told the agent syncs: --groups, or those of the documents. */
static int synced_groups(struct cfg *cfg, const char *list, struct replay *r, struct gw_err *err)
{
	cfg->n_groups = 0;
	if (list) {
		char *copy = strdup(list), *save = NULL;
		if (!copy)
			return gw_errf(err, "out of memory");
		for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
			int g = cfg_group_parse(w);
			if (g < 0) {
				gw_errf(err, "--groups: unknown group '%s'", w);
				free(copy);
				return -1;
			}
			if (!r->synced[g])
				cfg->groups[cfg->n_groups++] = (enum gw_group)g;
			r->synced[g] = 1;
		}
		free(copy);
		if (cfg->n_groups == 0)
			return gw_errf(err, "--groups: no group named");
		return 0;
	}
	for (size_t i = 0; i < r->n_docs; i++) {
		int g = replay_doc_group(r->docs[i], err);
		if (g < 0)
			return -1;
		if (!r->synced[g])
			cfg->groups[cfg->n_groups++] = (enum gw_group)g;
		r->synced[g] = 1;
	}
	return 0;
}

static int parse_count(const char *s, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 1)
		return -1;
	*out = v;
	return 0;
}

/* The documents to replay, in order: each argument expanded (replay_expand: a file, or a
 * directory's documents) and appended to r->docs. 0, or -1 with err set. */
static int collect_docs(struct replay *r, char **paths, int n, struct gw_err *err)
{
	for (int i = 0; i < n; i++) {
		char **more = NULL;
		size_t n_more = 0;
		if (replay_expand(paths[i], &more, &n_more, err) < 0) {
			replay_free_paths(more, n_more);
			return -1;
		}
		char **all = realloc(r->docs, (r->n_docs + n_more) * sizeof *all);
		if (!all) {
			replay_free_paths(more, n_more);
			return gw_errf(err, "out of memory");
		}
		r->docs = all;
		memcpy(r->docs + r->n_docs, more, n_more * sizeof *more);
		r->n_docs += n_more;
		free(more);
	}
	return 0;
}

/* The command line. The options not kept in the replay go to o. -1: go on (optind at the
 * first operand); otherwise the exit status to return (0 after --help). */
struct options {
	const char *config_path, *name, *groups;
	int threaded, verbose;
};

static int parse_options(int argc, char **argv, struct replay *r, struct options *o)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"name", required_argument, NULL, 'n'},
	    {"groups", required_argument, NULL, 'g'}, {"fail", required_argument, NULL, 'F'},
	    {"repeat", required_argument, NULL, 'R'}, {"threaded", no_argument, NULL, 'T'},
	    {"quiet", no_argument, NULL, 'q'},        {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "c:n:g:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config_path = optarg;
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'g':
			o->groups = optarg;
			break;
		case 'F':
		case 'R':
			if (parse_count(optarg, c == 'F' ? &r->fail_at : &r->repeat) < 0) {
				fprintf(stderr,
				        "gwsync-replay: %s: expected a number >= 1, got '%s'\n",
				        c == 'F' ? "--fail" : "--repeat", optarg);
				return 2;
			}
			break;
		case 'T':
			o->threaded = 1;
			break;
		case 'q':
			r->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		fputs(usage, stderr);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct replay r = {.repeat = 1, .tick_at = -1};
	struct options o = {.name = "replay"};
	int early = parse_options(argc, argv, &r, &o);
	if (early >= 0)
		return early;
	const char *config_path = o.config_path, *name = o.name, *groups = o.groups;
	int threaded = o.threaded, verbose = o.verbose;
	struct gw_err err = {0};
	int rc = 2;
	struct gw_log *log = NULL;
	struct subscribers *subs = NULL;
	struct ynode *config = NULL;
	if (gw_log_open(&log, verbose ? GW_LOG_DEBUG : GW_LOG_INFO, GW_LOG_TEXT, NULL, &err) < 0 ||
	    !(config = load_config(config_path, &err))) {
		fprintf(stderr, "gwsync-replay: %s\n", err.msg);
		goto out;
	}
	if (collect_docs(&r, argv + optind + 1, argc - optind - 1, &err) < 0) {
		fprintf(stderr, "gwsync-replay: %s\n", err.msg);
		goto out;
	}

	/* its -c file is the bare config: map, so messages name its keys, not gwsyncd's paths */
	struct cfg_subscriber cs = {
	    .name = (char *)name, .library = argv[optind], .line = 1, .bare_config = 1};
	cs.config = config;
	cs.own_config = config_path ? NULL : config; /* no -c: the empty map, no file to name */
	struct cfg cfg = {.path = (char *)(config_path ? config_path : "(no config)")};
	if (synced_groups(&cfg, groups, &r, &err) < 0) {
		fprintf(stderr, "gwsync-replay: %s\n", err.msg);
		goto out;
	}
	cfg.subscribers = &cs;
	cfg.n_subscribers = 1;
	if (subscribers_load(&cfg, log, &subs, &err) < 0) {
		fprintf(stderr, "gwsync-replay: %s\n", err.msg);
		goto out;
	}
	r.s = &subs->v[0];
	r.tick_at = r.s->desc->tick ? 0 : -1; /* a first tick() when delivery starts */
	if (threaded) {
		pthread_t t;
		if (gw_thread_start(&t, "replay", play_thread, &r) != 0) {
			fprintf(stderr, "gwsync-replay: cannot start a thread\n");
			goto out;
		}
		pthread_join(t, NULL);
	} else {
		play(&r);
	}
	rc = r.error ? 2 : r.rejected ? 1 : 0;
out:
	subscribers_free(subs); /* fini() on the main thread, as in the agent */
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(r.accepted[g]);
	replay_free_paths(r.docs, r.n_docs);
	ytree_free(config);
	gw_log_close(log);
	return rc;
}
