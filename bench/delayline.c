/* tl-delayline: a userspace delay line between two network interfaces for the benchmarks.
 *
 * Every Ethernet frame received on interface A is sent out of interface B DELAY microseconds
 * later, and every frame received on B goes out of A the same way: a wire with a fixed
 * one-way delay and no loss of its own, built on AF_PACKET because the lab kernel has no
 * netem. One thread per direction: it stamps each frame (CLOCK_MONOTONIC) as it is read into
 * a FIFO (a plain array, bounded) and sends it when its time has come, sleeping in ppoll()
 * with a nanosecond timeout (timer slack 1 us) until then.
 *
 * Capacity: -n frames of up to 2048 bytes per direction (default 65536, 128 MiB), enough for
 * 1 Gbit/s of 1500-byte frames held for 780 ms. AF_PACKET gives no way to push back on the
 * sender, so a frame that finds the FIFO full is counted (queue_full), never silently lost;
 * so are frames larger than a slot (too_big), failed sends (send_errors) and what the kernel
 * dropped before we read it (socket_drops, PACKET_STATISTICS). Frames still held when the
 * program stops are counted as held_at_exit.
 *
 * Usage: tl-delayline -a IFACE -b IFACE -d DELAY_US [-n FRAMES] [-s STATS.json]
 * Runs until SIGINT/SIGTERM; SIGUSR1 (and the exit) write the counters as JSON to -s.
 * Senders must hand it frames with complete checksums (ethtool -K IFACE tx off upstream).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DL_SLOT 2048u

struct dl_frame {
	uint64_t due_ns;
	uint32_t len;
	uint8_t data[DL_SLOT];
};

struct dl_dir {
	const char *name;	/* "a_to_b" */
	int rx_fd;		/* bound to the input interface */
	int tx_fd;		/* bound to the output interface */
	struct dl_frame *fifo;
	uint32_t cap, head, count;
	_Atomic uint64_t forwarded, queue_full, too_big, send_errors, held;
	uint64_t socket_drops;	/* main thread only */
	pthread_t thread;
};

static volatile sig_atomic_t dl_stop, dl_dump;
static uint64_t dl_delay_ns;

static uint64_t dl_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void dl_signal(int sig)
{
	if (sig == SIGUSR1)
		dl_dump = 1;
	else
		dl_stop = 1;
}

static int dl_socket_open(const char *ifname, int for_rx)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int fd, one = 1, buf = 64 << 20;

	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (sll.sll_ifindex == 0) {
		fprintf(stderr, "tl-delayline: no interface %s\n", ifname);
		return -1;
	}
	fd = socket(AF_PACKET, SOCK_RAW, for_rx ? htons(ETH_P_ALL) : 0);
	if (fd < 0) {
		perror("tl-delayline: socket(AF_PACKET)");
		return -1;
	}
	if (for_rx) {
		struct packet_mreq mr = { .mr_ifindex = sll.sll_ifindex, .mr_type = PACKET_MR_PROMISC };

		/* our own sends on this interface (the other direction) must not come back */
		if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
		    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr))) {
			perror("tl-delayline: setsockopt");
			close(fd);
			return -1;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	} else {
		sll.sll_protocol = 0;
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("tl-delayline: bind");
		close(fd);
		return -1;
	}
	return fd;
}

/* Send every frame whose time has come; returns ns until the next one is due (0: none held). */
static uint64_t dl_send_due(struct dl_dir *d)
{
	uint64_t now = dl_now();

	while (d->count > 0) {
		struct dl_frame *f = &d->fifo[d->head];

		if (f->due_ns > now)
			return f->due_ns - now;
		if (send(d->tx_fd, f->data, f->len, 0) == (ssize_t)f->len)
			atomic_fetch_add_explicit(&d->forwarded, 1, memory_order_relaxed);
		else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)
			return 1000; /* the device is busy: retry the same frame in 1 us */
		else
			atomic_fetch_add_explicit(&d->send_errors, 1, memory_order_relaxed);
		d->head = (d->head + 1) % d->cap;
		d->count--;
		atomic_store_explicit(&d->held, d->count, memory_order_relaxed);
		now = dl_now();
	}
	return 0;
}

/* Read every frame waiting on the input socket into the FIFO. */
static void dl_read_all(struct dl_dir *d)
{
	static __thread uint8_t spill[65536];

	for (;;) {
		struct dl_frame *f = NULL;
		uint8_t *buf = spill;
		size_t size = sizeof(spill);
		ssize_t n;

		if (d->count < d->cap) {
			f = &d->fifo[(d->head + d->count) % d->cap];
			buf = f->data;
			size = DL_SLOT;
		}
		n = recv(d->rx_fd, buf, size, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0)
			return;
		if (!f) {
			atomic_fetch_add_explicit(&d->queue_full, 1, memory_order_relaxed);
			continue;
		}
		if ((size_t)n > DL_SLOT) {
			atomic_fetch_add_explicit(&d->too_big, 1, memory_order_relaxed);
			continue;
		}
		f->len = (uint32_t)n;
		f->due_ns = dl_now() + dl_delay_ns;
		d->count++;
		atomic_store_explicit(&d->held, d->count, memory_order_relaxed);
	}
}

static void *dl_run(void *arg)
{
	struct dl_dir *d = arg;
	struct pollfd p = { .fd = d->rx_fd, .events = POLLIN };

	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!dl_stop) {
		uint64_t wait = dl_send_due(d);
		struct timespec ts;

		if (wait == 0 || wait > 50000000u)
			wait = 50000000u; /* wake up now and then to see dl_stop */
		ts.tv_sec = (time_t)(wait / 1000000000u);
		ts.tv_nsec = (long)(wait % 1000000000u);
		if (ppoll(&p, 1, &ts, NULL) > 0)
			dl_read_all(d);
	}
	return NULL;
}

static void dl_poll_socket_drops(struct dl_dir *d)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(d->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		d->socket_drops += st.tp_drops; /* reading resets the kernel's counters */
}

static void dl_write_stats(const char *path, struct dl_dir *dirs, int at_exit)
{
	char tmp[4096];
	FILE *f;
	int i;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "{\"delay_us\": %llu", (unsigned long long)(dl_delay_ns / 1000));
	for (i = 0; i < 2; i++) {
		struct dl_dir *d = &dirs[i];

		dl_poll_socket_drops(d);
		fprintf(f, ", \"%s\": {\"forwarded\": %llu, \"queue_full\": %llu, \"too_big\": %llu, "
			"\"send_errors\": %llu, \"socket_drops\": %llu, \"%s\": %llu}", d->name,
			(unsigned long long)atomic_load(&d->forwarded),
			(unsigned long long)atomic_load(&d->queue_full),
			(unsigned long long)atomic_load(&d->too_big),
			(unsigned long long)atomic_load(&d->send_errors),
			(unsigned long long)d->socket_drops, at_exit ? "held_at_exit" : "held",
			(unsigned long long)atomic_load(&d->held));
	}
	fprintf(f, "}\n");
	if (fclose(f) == 0)
		rename(tmp, path);
}

static int dl_dir_init(struct dl_dir *d, const char *name, const char *in, const char *out,
		       uint32_t cap)
{
	d->name = name;
	d->cap = cap;
	d->fifo = calloc(cap, sizeof(*d->fifo));
	if (!d->fifo) {
		fprintf(stderr, "tl-delayline: no memory for %u frames\n", cap);
		return -1;
	}
	d->rx_fd = dl_socket_open(in, 1);
	d->tx_fd = dl_socket_open(out, 0);
	return d->rx_fd < 0 || d->tx_fd < 0 ? -1 : 0;
}

static void dl_usage(void)
{
	fprintf(stderr, "usage: tl-delayline -a IFACE -b IFACE -d DELAY_US [-n FRAMES] [-s STATS.json]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct dl_dir dirs[2];
	const char *a = NULL, *b = NULL, *stats = NULL;
	unsigned long long delay_us = 0, cap = 65536;
	struct sigaction sa = { .sa_handler = dl_signal };
	char *end;
	int c, i;

	while ((c = getopt(argc, argv, "a:b:d:n:s:h")) != -1) {
		switch (c) {
		case 'a': a = optarg; break;
		case 'b': b = optarg; break;
		case 's': stats = optarg; break;
		case 'd':
			delay_us = strtoull(optarg, &end, 10);
			if (*end || delay_us > 10000000ULL)
				dl_usage();
			break;
		case 'n':
			cap = strtoull(optarg, &end, 10);
			if (*end || cap == 0 || cap > (1u << 22))
				dl_usage();
			break;
		default: dl_usage();
		}
	}
	if (!a || !b)
		dl_usage();
	dl_delay_ns = delay_us * 1000;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (dl_dir_init(&dirs[0], "a_to_b", a, b, (uint32_t)cap) ||
	    dl_dir_init(&dirs[1], "b_to_a", b, a, (uint32_t)cap))
		return 1;
	for (i = 0; i < 2; i++) {
		if (pthread_create(&dirs[i].thread, NULL, dl_run, &dirs[i])) {
			fprintf(stderr, "tl-delayline: pthread_create failed\n");
			return 1;
		}
	}
	fprintf(stderr, "tl-delayline: %s <-> %s, %llu us each way, %llu frames per direction\n",
		a, b, delay_us, cap);
	dl_write_stats(stats, dirs, 0);
	while (!dl_stop) {
		usleep(20000);
		if (dl_dump) {
			dl_dump = 0;
			dl_write_stats(stats, dirs, 0);
		}
	}
	for (i = 0; i < 2; i++)
		pthread_join(dirs[i].thread, NULL);
	dl_write_stats(stats, dirs, 1);
	return 0;
}
