/* The listening Unix socket shared by the WireGuard UAPI (uapi.c) and the YAML control API
 * (ctlapi.c), and the non-blocking send of their replies (also the metrics listener's). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctrl/unixsock.h"

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

int tl_unixsock_accept(const struct tl_unixsock *s)
{
	return accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

void tl_unixsock_close(struct tl_unixsock *s)
{
	struct stat st;

	if (s->fd < 0)
		return;
	if (stat(s->path, &st) == 0 && st.st_dev == s->st_dev && st.st_ino == s->st_ino)
		unlink(s->path);
	close(s->fd);
	s->fd = -1;
}

int tl_sock_send(int fd, const char *p, size_t len, size_t *off)
{
	ssize_t n;

	if (*off == len)
		return 0;
	n = send(fd, p + *off, len - *off, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	*off += (size_t)n;
	return 1;
}
