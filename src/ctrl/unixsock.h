/* The listening Unix socket of a local control protocol (the WireGuard UAPI, the YAML control
 * API): <dir>/<name>.sock, born 0600, refused while another live process answers on it, a
 * stale file left by a dead one replaced; at close only the file we created is removed. */
#ifndef TL_UNIXSOCK_H
#define TL_UNIXSOCK_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

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
/* One waiting connection, non-blocking and close-on-exec; -1 if none. */
int tl_unixsock_accept(const struct tl_unixsock *s);
/* Removes the socket file if it is still ours, closes the socket. Safe if not listening. */
void tl_unixsock_close(struct tl_unixsock *s);

/* Sends what is left of a reply: p[*off..len). 1 on progress (*off advanced), 0 if the
 * socket is full, -1 if the peer is gone. Never blocks, never raises SIGPIPE. */
int tl_sock_send(int fd, const char *p, size_t len, size_t *off);

#endif
