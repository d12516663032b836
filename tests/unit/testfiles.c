/* File helpers of the unit tests (see testfiles.h). */
#include "testfiles.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

char *test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/gwsync-test-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	return strdup(tmpl);
}

void rm_rf(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return;
	if (S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			rm_rf(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 4096 + 1 > cap)
			buf = realloc(buf, cap *= 2);
		size_t got = fread(buf + n, 1, 4096, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *nth_line(const char *path, const char *prefix, int want)
{
	char *text = slurp(path, NULL);
	if (!text)
		return NULL;
	char *found = NULL;
	int n = 0;
	size_t plen = strlen(prefix);
	for (char *p = text; *p && !found;) {
		size_t len = strcspn(p, "\n");
		if (len >= plen && strncmp(p, prefix, plen) == 0 && n++ == want)
			found = strndup(p, len);
		p += len + (p[len] == '\n');
	}
	free(text);
	return found;
}

int count_lines(const char *path, const char *prefix)
{
	int n = 0;
	char *line;
	while ((line = nth_line(path, prefix, n))) {
		free(line);
		n++;
	}
	return n;
}

int has_line(const char *path, const char *want)
{
	char *text = slurp(path, NULL);
	if (!text)
		return 0;
	int found = 0;
	size_t wlen = strlen(want);
	for (char *p = text; *p && !found;) {
		size_t len = strcspn(p, "\n");
		found = len == wlen && strncmp(p, want, len) == 0;
		p += len + (p[len] == '\n');
	}
	free(text);
	return found;
}

void sleep_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int wait_lines(const char *path, const char *prefix, int want, int64_t timeout_ms)
{
	int64_t until = gw_mono_ms() + timeout_ms;
	for (;;) {
		int n = count_lines(path, prefix);
		if (n >= want || gw_mono_ms() > until)
			return n;
		sleep_ms(10);
	}
}

int wait_has_line(const char *path, const char *line, int64_t timeout_ms)
{
	int64_t until = gw_mono_ms() + timeout_ms;
	while (!has_line(path, line)) {
		if (gw_mono_ms() > until)
			return 0;
		sleep_ms(10);
	}
	return 1;
}

char *build_path(const char *rel)
{
	const char *b = getenv("GWSYNC_BUILDDIR");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", b && *b ? b : ".", rel);
	return strdup(buf);
}
