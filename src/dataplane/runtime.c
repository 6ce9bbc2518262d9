/* Removal of the EAL runtime directory this process made (runtime.h). */
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>

#include "dataplane/runtime.h"

void tl_runtime_dir_save(char *out, size_t len)
{
	snprintf(out, len, "%s", rte_eal_get_runtime_dir());
}

void tl_runtime_dir_remove(const char *dir)
{
	char path[4352];
	struct dirent *e;
	DIR *d;

	if (!dir[0] || !(d = opendir(dir)))
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}
