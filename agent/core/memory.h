/*
 * The process's own idle private memory (issue 30 item 9): what main releases once, before
 * the threads that allocate exist. Measured in bench/README.md ("Third pass").
 *
 * Not done here: fewer malloc arenas. glibc gives each thread that allocates an arena of its
 * own, and malloc_trim() never gives back the top of a thread's arena, so the idle threads'
 * arenas stay 4-28 KiB dirty with nothing live in them; but with fewer arenas than pollers
 * (M_ARENA_MAX), pollers answered at the same moment queue on a shared arena's lock and an
 * idle agent wakes more than once per answer (measured in bench/README.md, third pass).
 *
 * Libraries initialised for nothing. Debian's libcurl4 (OpenSSL) loads GnuTLS through
 * librtmp and libldap, and GnuTLS initialises itself in its constructor (its ASN.1 trees,
 * ~130 KiB of heap) although no transfer of the agent ever uses it (http and https only,
 * through OpenSSL). Its own documented counterpart, gnutls_global_deinit(), takes that back
 * before curl_global_init(), so what libcurl, the configuration and the start-up sync
 * allocate next fills the freed space instead of new pages (released after curl's init,
 * the freed chunks lie scattered between live ones and half of it stays dirty). GnuTLS
 * counts its initialisations: a libcurl built on GnuTLS initialises it again in
 * curl_global_init() and keeps its own. A subscriber plugin may use GnuTLS counting on the
 * implicit initialisation (GnuTLS allows it since 3.3.0): a plugin that has GnuTLS among
 * its dependencies gets one initialisation of its own before its init(), given back when
 * it is unloaded.
 */
#ifndef GW_MEMORY_H
#define GW_MEMORY_H

#include <stddef.h>

/* Before curl_global_init(), single-threaded: balance GnuTLS's implicit initialisation.
 * 1 if released, 0 if GnuTLS is not in the process. */
int gw_memory_release_gnutls(void);

/* After dlopen() of a plugin, before its init(): if the plugin reaches GnuTLS (in itself
 * or its dependencies), initialise GnuTLS for it and return 1 (give it back with
 * gw_memory_gnutls_drop() when the plugin is unloaded); else 0. */
int gw_memory_gnutls_hold(void *dl);
void gw_memory_gnutls_drop(void);

#endif
