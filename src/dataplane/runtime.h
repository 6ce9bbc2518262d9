/* EAL's runtime directory (/var/run/dpdk/<file-prefix>) outlives rte_eal_cleanup(); the
 * process that made it removes it on the way out. */
#ifndef TL_RUNTIME_H
#define TL_RUNTIME_H

#include <stddef.h>

/* Copies rte_eal_get_runtime_dir() while EAL is up. */
void tl_runtime_dir_save(char *out, size_t len);
/* After rte_eal_cleanup(): removes the directory's files and the directory itself. */
void tl_runtime_dir_remove(const char *dir);

#endif
