/*
 * The configuration as `gwsyncd --pause` and `--resume` read it (see config.h
 * cfg_load_control): only what reaches the running agent, each with ${VAR} expanded alone,
 * so an operator who may use the control socket needs neither the admin's password file
 * nor its variable.
 */
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_walk.h"
#include "config/envexpand.h"
#include "config/ytree.h"
#include "core/readfile.h"

static const struct ynode *child(const struct ynode *map, const char *name)
{
	if (!map || map->type != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->text, name) == 0)
			return map->items[i];
	return NULL;
}

/* A string value with ${VAR} expanded; absent or null leaves *out NULL. */
static int control_text(const struct ynode *n, const char *key, char **out, struct gw_err *err)
{
	if (!n || (n->type == YNODE_SCALAR && n->null))
		return 0;
	if (n->type != YNODE_SCALAR)
		return gw_errf(err, "%s:%d:%d: %s: expected a string", n->file, n->line, n->col,
		               key);
	if (env_expand(n->text, out, NULL, NULL, err) < 0)
		return gw_err_prefix(err, "%s:%d:%d: %s", n->file, n->line, n->col, key);
	return 0;
}

int cfg_load_control(const char *path, struct cfg **out, struct gw_err *err)
{
	struct ynode *root;
	if (ytree_parse_file(path, &root, err) < 0)
		return -1;
	struct cfg *c = cfg_new();
	if (!c) {
		ytree_free(root);
		return gw_errf(err, "out of memory");
	}
	c->tree = root;
	char *state_dir = NULL, *token_file = NULL;
	const struct ynode *status = child(root, "status");
	if (!(c->path = strdup(path)) ||
	    control_text(child(root, "state_dir"), "state_dir", &state_dir, err) < 0 ||
	    control_text(child(root, "control_socket"), "control_socket", &c->control_socket, err) <
	        0 ||
	    control_text(child(status, "listen"), "status.listen", &c->status_listen, err) < 0 ||
	    control_text(child(status, "token"), "status.token", &c->status_token, err) < 0 ||
	    control_text(child(status, "token_file"), "status.token_file", &token_file, err) < 0)
		goto fail;
	if (state_dir) {
		free(c->state_dir);
		c->state_dir = state_dir;
		state_dir = NULL;
	}
	if (token_file && !c->status_token) {
		/* only for the HTTP fallback: a token this user cannot read (or that is not a
		 * regular file, which must not hang the client: core/readfile.h) is absent */
		char *buf = NULL;
		size_t len = 0;
		struct gw_err ferr;
		if (readfile(token_file, 4096, &buf, &len, &ferr) == 0) {
			buf[strcspn(buf, "\n")] = '\0';
			c->status_token = strdup(buf);
			explicit_bzero(buf, len);
			free(buf);
		}
	}
	free(token_file);
	if (c->status_token && !*c->status_token) {
		free(c->status_token);
		c->status_token = NULL;
	}
	if (cfg_default_control_socket(c, err) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	free(state_dir);
	free(token_file);
	cfg_free(c);
	return -1;
}
