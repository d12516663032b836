/*
 * Loaders for the `admin:` section of the configuration (config_admin.c): the server
 * URLs, the groups, the credentials, the TLS files, and the checks that involve several
 * admin keys at once. A source's own section uses the shared ones (groups, credentials). They
 * follow the conventions of config_walk.h.
 */
#ifndef GW_CONFIG_ADMIN_H
#define GW_CONFIG_ADMIN_H

#include "config/config_walk.h"

int cfga_admin(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
               void *base);
int cfga_servers(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                 void *base);
int cfga_groups(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base);
int cfga_username(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base);
int cfga_password(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base);
int cfga_password_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);
int cfga_status_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base);
int cfga_status_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base);
int cfga_read_timeout(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base);
int cfga_hold(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base);
int cfga_readable_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);

/* A secret read whole from `file` (a regular file only: core/readfile.h), one trailing
 * "\n" dropped, never quoted in a message: password_file and the like. */
int cfga_read_secret_file(struct loader *ld, const struct ynode *at, const char *path,
                          const char *file, char **out);

/* After the walk, when admin: is the source section: admin.servers present, read_timeout
 * above the hold, a password when there is a username, cert and key together, the checks
 * of the sources' sections inside admin: (admin.websocket); the default groups. */
int cfga_check(struct loader *ld, const struct ynode *root);

/* The groups when none are configured: the five every gateway needs. */
void cfga_default_groups(struct cfg *c);

#endif
