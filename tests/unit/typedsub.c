/*
 * A test subscriber that writes down which typed views it is given (check_dispatch): per
 * apply() one line
 *
 *   apply GROUP added=N typed=K asked=J first=X
 *
 * K: the added items whose typed view is set; J: those host->item_typed() gave a view for
 * (the on-demand flavour only, else 0); X: the first added rule's selectorId as its typed
 * view says (through item_typed() when on demand), "-" if none. Four flavours, one
 * source: typedsub (ABI 2, no flags: every view is promised), typedsub_od (ABI 2,
 * GW_SUB_TYPED_ON_DEMAND), typedsub_lists (ABI 2, GW_SUB_LISTS_ON_DEMAND: the items read
 * through host->change_item, every view promised) and typedsub1 (ABI 1, built against
 * tests/abi1's header).
 * Option: out (path, required). Built only for `make check`.
 */
#include <gwsync/subscriber.h>
#include <stdio.h>
#include <stdlib.h>

struct typedsub {
	FILE *out;
};

static int ts_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	const char *out = NULL;
	if (host->config_string(host, config, "out", &out) != GW_CONFIG_OK)
		return -1;
	struct typedsub *t = calloc(1, sizeof *t);
	if (!t || !(t->out = fopen(out, "a"))) {
		free(t);
		return -1;
	}
	setvbuf(t->out, NULL, _IOLBF, 0);
	*state = t;
	return 0;
}

static int has_view(const struct gw_item *it)
{
	return it->plugin || it->selector || it->rule || it->app_auth || it->meta;
}

#ifdef TYPEDSUB_ABI1
static int ts_apply(void *state, const struct gw_change *c)
{
	const struct gw_host *host = NULL;
#else
static int ts_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
#endif
	struct typedsub *t = state;
	size_t typed = 0, asked = 0;
	const char *first = NULL;
	for (size_t i = 0; i < c->n_added; i++) {
#ifdef TYPEDSUB_LISTS
		const struct gw_item *it = host->change_item(host, c, GW_LIST_ADDED, i);
		if (!it)
			return 1;
#else
		const struct gw_item *it = c->added[i];
#endif
		typed += has_view(it) ? 1 : 0;
#ifdef TYPEDSUB_ON_DEMAND
		if (GW_HAS(host, item_typed) && (it = host->item_typed(host, it)) && has_view(it))
			asked++;
#endif
		if (!first && it->rule)
			first = it->rule->selector_id;
	}
	(void)host;
	fprintf(t->out, "apply %s added=%zu typed=%zu asked=%zu first=%s\n", c->group_name,
	        c->n_added, typed, asked, first ? first : "-");
	return 0;
}

#ifdef TYPEDSUB_ABI1
static void ts_fini(void *state)
{
#else
static void ts_fini(void *state, const struct gw_host *host)
{
	(void)host;
#endif
	struct typedsub *t = state;
	if (t) {
		fclose(t->out);
		free(t);
	}
}

#ifdef TYPEDSUB_ABI1
static const struct gw_subscriber typedsub = {
    .abi = 1, .name = "typedsub1", .init = ts_init, .apply = ts_apply, .fini = ts_fini};
#else
static const struct gw_option ts_options[] = {{"out", GW_OPT_PATH, NULL, 1, "where to write"},
                                              {NULL, 0, NULL, 0, NULL}};
static const struct gw_subscriber typedsub = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "typedsub",
    .options = ts_options,
    .init = ts_init,
    .apply = ts_apply,
    .fini = ts_fini,
#ifdef TYPEDSUB_ON_DEMAND
    .flags = GW_SUB_TYPED_ON_DEMAND,
#endif
#ifdef TYPEDSUB_LISTS
    .flags = GW_SUB_LISTS_ON_DEMAND,
#endif
};
#endif

GWSYNC_EXPORT const struct gw_subscriber *gwsync_subscriber(void)
{
	return &typedsub;
}
