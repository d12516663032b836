/*
 * The state directory made ready (see state_dir.h). The checks are the ones a write will
 * meet (access() with this process's ids), so a start that passes here does not fail later
 * on the directory itself; the hint names the real user and group so it can be pasted.
 */
#include "ops/state_dir.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/atomic_file.h"

/* "install -d -m 0750 -o USER -g GROUP PATH", run as root. */
static void how_to_make(char *buf, size_t cap, const char *path)
{
	char user[64], group[64];
	const struct passwd *pw = getpwuid(geteuid());
	const struct group *gr = getgrgid(getegid());
	snprintf(user, sizeof user, "%s", pw ? pw->pw_name : "");
	snprintf(group, sizeof group, "%s", gr ? gr->gr_name : "");
	if (!user[0])
		snprintf(user, sizeof user, "%u", (unsigned)geteuid());
	if (!group[0])
		snprintf(group, sizeof group, "%u", (unsigned)getegid());
	snprintf(buf, cap, "install -d -m %04o -o %s -g %s %s", STATE_DIR_MODE, user, group, path);
}

static int refuse(struct gw_err *err, const char *path, const char *why)
{
	char cmd[1200];
	how_to_make(cmd, sizeof cmd, path);
	return gw_errf(err,
	               "state_dir %s: %s. Under systemd the unit's StateDirectory= makes it; "
	               "run any other way, make it once as root: %s",
	               path, why, cmd);
}

int state_dir_prepare(const char *path, int create, struct gw_err *err)
{
	struct gw_err why;
	struct stat sb;
	if (stat(path, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return gw_errf(err, "state_dir %s: not a directory", path);
		if (access(path, W_OK | X_OK) != 0) {
			int e =
			    errno; /* how_to_make() looks up users and groups, which sets errno */
			char how[1200];
			how_to_make(how, sizeof how, path);
			gw_errf(
			    err,
			    "state_dir %s: this user cannot write in it (%s): no snapshot or "
			    "pause switch can be kept, only read. If it should be this agent's, "
			    "as root: %s",
			    path, strerror(e), how);
			return 1;
		}
		return 0;
	}
	if (errno != ENOENT)
		return gw_errf(err, "state_dir %s: %s", path, strerror(errno));
	if (dir_creatable(path, &why) != 0)
		return refuse(err, path, why.msg);
	if (!create)
		return 0;
	if (make_dirs(path, STATE_DIR_MODE, &why) != 0)
		return refuse(err, path, why.msg);
	/* make_dirs is subject to the umask; the directory itself gets the exact mode */
	if (chmod(path, STATE_DIR_MODE) != 0)
		return gw_errf(err, "state_dir %s: cannot set its mode: %s", path, strerror(errno));
	return 0;
}
