/* libFuzzer harness for the configuration loader: the input is written to a temporary file
 * (tl_config_load takes a path), loaded, and freed. Any crash, leak or sanitizer report is
 * a bug; a rejected config is fine but must come with a one-line error. */
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tl_fuzz_path[64];

static void tl_fuzz_cleanup(void)
{
	if (tl_fuzz_path[0])
		unlink(tl_fuzz_path);
}

static int tl_fuzz_write(const uint8_t *data, size_t size)
{
	FILE *f;

	if (!tl_fuzz_path[0]) {
		int fd;

		snprintf(tl_fuzz_path, sizeof(tl_fuzz_path), "/tmp/tl-fuzz-config-XXXXXX");
		fd = mkstemp(tl_fuzz_path);
		if (fd < 0)
			abort();
		close(fd);
		atexit(tl_fuzz_cleanup);
	}
	f = fopen(tl_fuzz_path, "wb");
	if (!f)
		return -1;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_config *cfg = NULL;
	char err[512];

	if (tl_fuzz_write(data, size) < 0)
		return 0;
	if (tl_config_load(tl_fuzz_path, &cfg, err, sizeof(err)) == 0)
		tl_config_free(cfg);
	else if (!err[0] || strchr(err, '\n') || cfg)
		abort();   /* every failure has exactly one line and no config */
	return 0;
}
