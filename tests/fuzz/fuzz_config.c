/*
 * libFuzzer target: the configuration parser (libyaml tree, validation, ${VAR} expansion,
 * units). A configuration is trusted more than a network reply, but a typo must give an
 * error, never a crash. cfg_load reads a path, so each input goes through a memfd.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("gwsync-fuzz.yaml", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		struct cfg *cfg = NULL;
		struct gw_err err;
		if (cfg_load(path, &cfg, &err) == 0)
			cfg_free(cfg);
	}
	close(fd);
	return 0;
}
