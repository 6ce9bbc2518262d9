/* The listening Unix socket shared by the WireGuard UAPI and the YAML control API, and the
 * request server on it (unixsock.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/unixsock.h"

static void sun_of(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
}

/* 1 if a live process answers on path, 0 if not (a stale file is removed), -1 on error. */
static int socket_in_use(const char *path)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -1;
	sun_of(&sun, path);
	r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (r == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	if (errno != ECONNREFUSED)
		return -1;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

static int socket_listen(struct tl_unixsock *s, int backlog)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int r;

	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -1;
	sun_of(&sun, s->path);
	old = umask(0177);           /* the socket file is born 0600 */
	r = bind(s->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r < 0)
		return -1;
	if (stat(s->path, &st) < 0 || listen(s->fd, backlog) < 0) {
		r = errno;
		unlink(s->path);
		errno = r;
		return -1;
	}
	s->st_dev = st.st_dev;
	s->st_ino = st.st_ino;
	return 0;
}

int tl_unixsock_open(struct tl_unixsock *s, const char *who, const char *dir, const char *name, int backlog,
		     char *err, size_t errlen)
{
	int n = snprintf(s->path, sizeof(s->path), "%s/%s.sock", dir, name), busy;

	s->fd = -1;
	if (n <= 0 || (size_t)n >= sizeof(s->path)) {
		snprintf(err, errlen, "%s: instance name too long for a socket path", who);
		return -1;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: cannot create %s: %s", who, dir, strerror(errno));
		return -1;
	}
	busy = socket_in_use(s->path);
	if (busy != 0) {
		snprintf(err, errlen, busy > 0 ? "%s: %s: another daemon is serving '%s' (is it still running?)"
					  : "%s: %s: cannot check or remove the old socket (%s)",
			 who, s->path, busy > 0 ? name : strerror(errno));
		return -1;
	}
	if (socket_listen(s, backlog) != 0) {
		snprintf(err, errlen, "%s: cannot listen on %s: %s", who, s->path, strerror(errno));
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

int tl_unixsock_take(struct tl_unixsock *s)
{
	int fd = s->fd;

	s->fd = -1;
	return fd;
}

void tl_unixsock_close(struct tl_unixsock *s)
{
	struct stat st;

	if (s->st_ino && stat(s->path, &st) == 0 && st.st_dev == s->st_dev && st.st_ino == s->st_ino)
		unlink(s->path);
	s->st_ino = 0;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int tl_unix_server_open(struct tl_unix_server *u, const char *who, const char *dir, const char *name,
			const struct tl_server_ops *ops, void *ctx, struct tl_evloop *loop, char *err, size_t errlen)
{
	if (tl_unixsock_open(&u->sock, who, dir, name, TL_SERVER_MAX_CLIENTS, err, errlen) != 0)
		return -1;
	if (tl_server_start(&u->srv, ops, ctx, loop, tl_unixsock_take(&u->sock)) != 0) {
		snprintf(err, errlen, "%s: %s", who, strerror(errno));
		tl_unixsock_close(&u->sock);
		return -1;
	}
	return 0;
}

void tl_unix_server_close(struct tl_unix_server *u)
{
	tl_server_stop(&u->srv);
	tl_unixsock_close(&u->sock);
}
