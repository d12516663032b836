/*
 * The libraries' unused start-up state (see memory.h).
 * GnuTLS is found by its symbol in the loaded process, never linked: the agent does not
 * depend on it, and a libcurl built without it leaves nothing to release.
 */
#include "core/memory.h"

#include <dlfcn.h>
#include <string.h>

/* The GnuTLS function `name` in the process, or NULL. */
static void (*gnutls_fn(void *scope, const char *name))(void)
{
	void (*fn)(void) = NULL;
	void *sym = dlsym(scope, name);
	if (sym) /* POSIX's way from an object pointer to a function pointer */
		memcpy(&fn, &sym, sizeof fn);
	return fn;
}

int gw_memory_release_gnutls(void)
{
	void (*deinit)(void) = gnutls_fn(RTLD_DEFAULT, "gnutls_global_deinit");
	if (!deinit)
		return 0;
	deinit();
	return 1;
}

int gw_memory_gnutls_hold(void *dl)
{
	/* dlsym() on a handle looks in the object and in its dependencies */
	void *sym = dl ? dlsym(dl, "gnutls_global_init") : NULL;
	if (!sym)
		return 0;
	int (*init)(void);
	memcpy(&init, &sym, sizeof init);
	return init() == 0;
}

void gw_memory_gnutls_drop(void)
{
	void (*deinit)(void) = gnutls_fn(RTLD_DEFAULT, "gnutls_global_deinit");
	if (deinit)
		deinit();
}
