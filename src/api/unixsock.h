/* The listening Unix socket of a local control protocol (the WireGuard UAPI, the YAML control
 * API): <dir>/<name>.sock, born 0600, refused while another live process answers on it, a
 * stale file left by a dead one replaced; at close only the file we created is removed. */
#ifndef TL_API_UNIXSOCK_H
#define TL_API_UNIXSOCK_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

#include "api/server.h"

struct tl_unixsock {
	int fd;                         /* -1 = not listening */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t st_dev;                   /* the socket file we created, to remove only ours */
	ino_t st_ino;
};

/* Creates dir (0755) if needed and listens on <dir>/<name>.sock, non-blocking. On failure
 * -1, fd -1 and a message in err that starts with "<who>: " (the instance name is too long,
 * another daemon is serving it, the old file cannot be removed, bind/listen failed). */
int tl_unixsock_open(struct tl_unixsock *s, const char *who, const char *dir, const char *name, int backlog,
		     char *err, size_t errlen);
/* Hands the listening socket to its server (api/server.h), which closes it; s keeps the
 * file to remove. */
int tl_unixsock_take(struct tl_unixsock *s);
/* Removes the socket file if it is still ours, closes the socket if still held. Safe if not
 * listening. */
void tl_unixsock_close(struct tl_unixsock *s);

/* A request server (server.h) on <dir>/<name>.sock. */
struct tl_unix_server {
	struct tl_unixsock sock;
	struct tl_server srv;
};

/* 0, or -1 with a message in err that starts with "<who>: ". */
int tl_unix_server_open(struct tl_unix_server *u, const char *who, const char *dir, const char *name,
			const struct tl_server_ops *ops, void *ctx, struct tl_evloop *loop, char *err, size_t errlen);
/* Closes every client and the socket, removes the socket file. */
void tl_unix_server_close(struct tl_unix_server *u);

#endif
