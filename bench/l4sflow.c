/* tl-l4sflow: a scalable (L4S, RFC 9331) paced UDP sender, its receiver, and a bulk TCP flow,
 * for the lab test of the AQM's L4S step (tests/integration/test_l4s.sh; the lab kernel has
 * neither DCTCP nor Prague).
 *
 *   send   numbered datagrams stamped with their send time (CLOCK_REALTIME: the lab's
 *          namespaces share the clock), ECT(1) (IP_TOS / IPV6_TCLASS; --ect 0|none). The
 *          receiver feeds back its cumulative counts of datagrams and of CE ones, and the
 *          highest number seen. DCTCP (RFC 8257) on them: a window (cwnd datagrams in flight)
 *          paced at 1.2 cwnd / srtt (2x in slow start); per window of data (one RTT) alpha <-
 *          (1 - g) alpha + g F, F its CE fraction, g = 1/16, alpha from 1; the first CE fed back
 *          in a window cuts cwnd to cwnd (1 - alpha / 2); without marks cwnd doubles per RTT
 *          until the first mark, then grows one datagram per RTT while the window held the
 *          sender back. No feedback for 200 ms: cwnd 1. Woken late, it sends at most one
 *          datagram more than its pacing schedule. Phases (in the datagrams): base (--base-pps,
 *          --base-s), warm-up (--warmup-s), measure (--seconds), end marker; --ready FILE is
 *          created when the base phase is over. JSON summary on stdout.
 *   sink   receives them (kernel receive time SO_TIMESTAMPNS, ECN field IP_RECVTOS /
 *          IPV6_RECVTCLASS), feeds back at each arrival (at most every --feedback-us), and
 *          counts the bytes of one TCP connection on the same port while the window is open
 *          (first measure datagram to the end marker). Exits after the end marker once the TCP
 *          peer closed (or 3 s later), or after --idle-s without a datagram. JSON summary: the
 *          base phase's one-way delay, the measure phase's one-way delay and queue delay (minus
 *          the base median; also without host stalls, see corrected()), ECN codepoints per
 *          phase, datagrams missing, both flows' bytes in the window.
 *   bulk   one TCP flow for --seconds with congestion control --cc (default cubic) set on its
 *          socket; prints whether ECN was negotiated and the kernel's counters.
 *   --trace FILE: a line per datagram (sink: receive ns, phase, number, one-way delay us, ECN)
 *          or per window of data (send: ns, datagrams and CE in it, cwnd, alpha, srtt us).
 *
 *   tl-l4sflow sink --port P [--bind ADDR] [--feedback-us U] [--idle-s S] [--stall-us U]
 *   tl-l4sflow send --dst ADDR --port P [--size B] [--ect 1|0|none] [--base-s S] [--base-pps N]
 *                   [--warmup-s S] [--seconds S]
 *   tl-l4sflow bulk --dst ADDR --port P --seconds S [--cc NAME]
 *   (sink and send also take [--ready FILE] [--trace FILE]) */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LF_MAGIC_DATA 0x4c345364u /* "L4Sd" */
#define LF_MAGIC_FB 0x4c345366u   /* "L4Sf" */
#define LF_HDR 24u
#define LF_FB_LEN 48u
#define LF_MAX_SIZE 8192u

enum lf_phase { LF_BASE, LF_WARMUP, LF_MEASURE, LF_END, LF_PHASES };
static const char *const lf_phase_name[LF_PHASES] = { "base", "warmup", "measure", "end" };

static void die(const char *what)
{
	fprintf(stderr, "tl-l4sflow: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(const char *why)
{
	fprintf(stderr, "tl-l4sflow: %s\nusage: tl-l4sflow sink|send|bulk [options] (see bench/l4sflow.c)\n", why);
	exit(2);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t mono(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

/* Big-endian fields of the datagrams. */
static void put64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }
static void put32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	fclose(f);
}

/* ---- options ------------------------------------------------------------------------ */

struct lf_opts {
	const char *dst, *bind, *ready, *cc, *trace, *ect_name;
	double port, size, base_pps, base_s, warmup_s, seconds, idle_s, feedback_us, stall_us;
	int ect;                   /* ECN field: 1, 2 or 0 */
};

static void parse(struct lf_opts *o, int argc, char **argv)
{
	const struct { const char *name; const char **str; double *num, lo, hi; } opt[] = {
		{ "--dst", &o->dst, NULL, 0, 0 }, { "--bind", &o->bind, NULL, 0, 0 },
		{ "--ready", &o->ready, NULL, 0, 0 }, { "--trace", &o->trace, NULL, 0, 0 },
		{ "--cc", &o->cc, NULL, 0, 0 }, { "--ect", &o->ect_name, NULL, 0, 0 },
		{ "--port", NULL, &o->port, 1, 65535 }, { "--size", NULL, &o->size, LF_HDR, LF_MAX_SIZE },
		{ "--base-pps", NULL, &o->base_pps, 1, 1e5 }, { "--base-s", NULL, &o->base_s, 0, 3600 },
		{ "--warmup-s", NULL, &o->warmup_s, 0, 3600 }, { "--seconds", NULL, &o->seconds, 0.1, 3600 },
		{ "--idle-s", NULL, &o->idle_s, 0.1, 3600 }, { "--feedback-us", NULL, &o->feedback_us, 0, 1e7 },
		{ "--stall-us", NULL, &o->stall_us, 1, 1e7 },
	};

	*o = (struct lf_opts){ .cc = "cubic", .ect_name = "1", .size = 1200, .base_pps = 200, .base_s = 2,
			       .warmup_s = 3, .seconds = 10, .idle_s = 10, .stall_us = 1000 };
	for (int i = 2; i < argc; i += 2) {
		size_t j = 0;
		char *end;

		while (j < sizeof(opt) / sizeof(opt[0]) && strcmp(argv[i], opt[j].name))
			j++;
		if (j == sizeof(opt) / sizeof(opt[0]) || i + 1 >= argc)
			usage(argv[i]);
		if (opt[j].str) {
			*opt[j].str = argv[i + 1];
			continue;
		}
		*opt[j].num = strtod(argv[i + 1], &end);
		if (*end || end == argv[i + 1] || !(*opt[j].num >= opt[j].lo && *opt[j].num <= opt[j].hi)) {
			fprintf(stderr, "tl-l4sflow: %s %s: not a number in [%g, %g]\n", argv[i], argv[i + 1], opt[j].lo,
				opt[j].hi);
			exit(2);
		}
	}
	o->ect = !strcmp(o->ect_name, "none") ? 0 : !strcmp(o->ect_name, "0") ? 2 : !strcmp(o->ect_name, "1") ? 1 : -1;
	if (o->ect < 0)
		usage("--ect takes 1, 0 or none");
	if (!o->port)
		usage("--port is required");
}

static void resolve(const char *host, unsigned port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST | AI_PASSIVE }, *ai;
	char p[8];
	int rc;

	snprintf(p, sizeof(p), "%u", port);
	rc = getaddrinfo(host, p, &hints, &ai);
	if (rc) {
		fprintf(stderr, "tl-l4sflow: %s: %s\n", host ? host : "(any)", gai_strerror(rc));
		exit(2);
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
}

/* A datagram socket for addr (bind if listen), asking for receive times and the ECN field. */
static int udp_socket(const struct sockaddr_storage *ss, socklen_t len, bool listen_side)
{
	int fd = socket(ss->ss_family, SOCK_DGRAM, 0), one = 1, buf = 8 << 20;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)))
		die("SO_TIMESTAMPNS");
	if (ss->ss_family == AF_INET6) {
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)))
			die("IPV6_RECVTCLASS");
	} else if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one))) {
		die("IP_RECVTOS");
	}
	if (listen_side) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)ss, len))
			die("bind (udp)");
	} else if (connect(fd, (const struct sockaddr *)ss, len)) {
		die("connect (udp)");
	}
	return fd;
}

/* One datagram with its kernel receive time (CLOCK_REALTIME) and ECN field; length or -1. */
static ssize_t recv_stamped(int fd, uint8_t *buf, size_t cap, struct sockaddr_storage *from, socklen_t *fromlen,
			    uint64_t *rx_ns, int *ecn)
{
	char ctl[256];
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_name = from, .msg_namelen = from ? sizeof(*from) : 0, .msg_iov = &iov,
			     .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);

	if (n < 0)
		return -1;
	if (fromlen)
		*fromlen = mh.msg_namelen;
	*rx_ns = now_ns(CLOCK_REALTIME);
	*ecn = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			*rx_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			*ecn = *(const uint8_t *)CMSG_DATA(c) & 3;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			int tc;

			memcpy(&tc, CMSG_DATA(c), sizeof(tc));
			*ecn = tc & 3;
		}
	}
	return n;
}

/* ---- sink ----------------------------------------------------------------------------- */

struct lf_vec {
	int64_t *v;
	size_t n, cap;
};

static void vec_push(struct lf_vec *a, int64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 4096;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			die("realloc");
	}
	a->v[a->n++] = x;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The p-quantile (nearest rank) of a sorted vector. */
static int64_t quantile(const struct lf_vec *a, double p)
{
	size_t r = (size_t)ceil(p * (double)a->n);

	if (!a->n)
		return 0;
	return a->v[r ? (r > a->n ? a->n : r) - 1 : 0];
}

struct lf_sink {
	uint64_t pkts[LF_PHASES], ecn[LF_PHASES][4], bytes[LF_PHASES];
	struct lf_vec owd[LF_PHASES];     /* one-way delays, ns: base and measure */
	uint64_t rcvd, ce, max_seq, unique, dups, bad;
	uint8_t *seen;                    /* one bit per sequence number */
	uint64_t seen_bits;
	uint64_t last_fb, last_send_ns, last_rx_mono;
	uint64_t win_first_ns, win_last_ns, tcp_window, tcp_total;
	bool window, ended, tcp_eof, tcp_seen;
	FILE *trace;
	struct sockaddr_storage peer;
	socklen_t peerlen;
};

static bool seen_set(struct lf_sink *k, uint64_t seq)
{
	bool was;

	if (seq >= k->seen_bits) {
		uint64_t bits = k->seen_bits ? k->seen_bits : 1 << 16;

		while (bits <= seq)
			bits *= 2;
		k->seen = realloc(k->seen, bits / 8);
		if (!k->seen)
			die("realloc");
		memset(k->seen + k->seen_bits / 8, 0, (bits - k->seen_bits) / 8);
		k->seen_bits = bits;
	}
	was = k->seen[seq / 8] >> (seq % 8) & 1;
	k->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
	return was;
}

static void sink_feedback(int fd, struct lf_sink *k)
{
	uint8_t fb[LF_FB_LEN] = { 0 };

	put32(fb, LF_MAGIC_FB);
	put64(fb + 8, k->rcvd);
	put64(fb + 16, k->ce);
	put64(fb + 24, k->max_seq);
	put64(fb + 32, k->last_send_ns);
	put64(fb + 40, mono() - k->last_rx_mono);
	if (sendto(fd, fb, sizeof(fb), 0, (struct sockaddr *)&k->peer, k->peerlen) >= 0)
		k->last_fb = mono();
}

static void sink_datagram(int fd, struct lf_sink *k, const struct lf_opts *o, const uint8_t *b, ssize_t n,
			  uint64_t rx_ns, int ecn)
{
	unsigned phase;
	uint64_t seq, sent;

	if (n < (ssize_t)LF_HDR || get32(b) != LF_MAGIC_DATA || b[4] >= LF_PHASES) {
		k->bad++;
		return;
	}
	phase = b[4];
	seq = get64(b + 8);
	sent = get64(b + 16);
	k->last_rx_mono = mono();
	if (phase == LF_END) {
		k->window = false;
		k->ended = true;
		k->ce += ecn == 3;     /* marked as any other: the AQM counted it */
		sink_feedback(fd, k);
		return;
	}
	if (seen_set(k, seq)) {
		k->dups++;
		return;
	}
	k->unique++;
	k->rcvd++;
	k->ce += ecn == 3;
	if (seq > k->max_seq || k->unique == 1)
		k->max_seq = seq;
	k->last_send_ns = sent;
	k->pkts[phase]++;
	k->ecn[phase][ecn]++;
	k->bytes[phase] += (uint64_t)n;
	if (phase == LF_BASE || phase == LF_MEASURE)
		vec_push(&k->owd[phase], (int64_t)(rx_ns - sent));
	if (k->trace)
		fprintf(k->trace, "%" PRIu64 " %u %" PRIu64 " %.1f %d\n", rx_ns, phase, seq,
			(double)(int64_t)(rx_ns - sent) / 1e3, ecn);
	if (phase == LF_MEASURE) {
		if (!k->win_first_ns) {
			k->win_first_ns = rx_ns;
			k->window = !k->ended;
		}
		k->win_last_ns = rx_ns;
	}
	if (mono() - k->last_fb >= (uint64_t)(o->feedback_us * 1000))
		sink_feedback(fd, k);
}

static void print_q(const char *name, struct lf_vec *a, int64_t base, bool last)
{
	printf("  \"%s\": {\"n\": %zu, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, \"p99_9\": %.1f, \"max\": %.1f}%s\n",
	       name, a->n, (double)(quantile(a, 0.5) - base) / 1e3, (double)(quantile(a, 0.9) - base) / 1e3,
	       (double)(quantile(a, 0.99) - base) / 1e3, (double)(quantile(a, 0.999) - base) / 1e3,
	       (double)(a->n ? a->v[a->n - 1] - base : 0) / 1e3, last ? "" : ",");
}

/* The measure phase's queue delay without the host's stalls: between consecutive datagrams a
 * fair queue at the bottleneck raises the delay by a few frame times at most, so a rise above
 * stall_ns is a stall outside any queue (a process waiting for a CPU, with datagrams held in a
 * ring or socket), added to the stall level; falling delays drain the level first. */
static struct lf_vec corrected(const struct lf_vec *m, int64_t base, int64_t stall_ns, uint64_t *n, double *ms)
{
	struct lf_vec c = { 0 };
	int64_t level = 0;

	for (size_t i = 0; i < m->n; i++) {
		int64_t j = i ? m->v[i] - m->v[i - 1] : 0;

		if (j > stall_ns) {
			level += j;
			(*n)++;
			*ms += (double)j / 1e6;
		} else if (j < 0) {
			level = level + j > 0 ? level + j : 0;
		}
		vec_push(&c, m->v[i] - base - level);
	}
	return c;
}

static void sink_report(const struct lf_opts *o, struct lf_sink *k)
{
	struct lf_vec *b = &k->owd[LF_BASE], *m = &k->owd[LF_MEASURE], c;
	int64_t base_min, base_med;
	uint64_t stalls = 0;
	double stall_ms = 0;

	if (b->n)
		qsort(b->v, b->n, sizeof(int64_t), cmp64);
	base_min = b->n ? b->v[0] : 0;
	base_med = quantile(b, 0.5);
	c = corrected(m, base_med, (int64_t)(o->stall_us * 1000), &stalls, &stall_ms);
	if (m->n)
		qsort(m->v, m->n, sizeof(int64_t), cmp64);
	if (c.n)
		qsort(c.v, c.n, sizeof(int64_t), cmp64);
	printf("{\n  \"received\": %" PRIu64 ", \"missing\": %" PRIu64 ", \"duplicates\": %" PRIu64
	       ", \"not_ours\": %" PRIu64 ", \"ce\": %" PRIu64 ", \"ended\": %s,\n",
	       k->rcvd, k->unique ? k->max_seq + 1 - k->unique : 0, k->dups, k->bad, k->ce, k->ended ? "true" : "false");
	printf("  \"phases\": {");
	for (int p = 0; p < LF_END; p++)
		printf("\"%s\": {\"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"not_ect\": %" PRIu64
		       ", \"ect1\": %" PRIu64 ", \"ect0\": %" PRIu64 ", \"ce\": %" PRIu64 "}%s",
		       lf_phase_name[p], k->pkts[p], k->bytes[p], k->ecn[p][0], k->ecn[p][1], k->ecn[p][2], k->ecn[p][3],
		       p + 1 < LF_END ? ", " : "},\n");
	printf("  \"base_owd_us\": {\"n\": %zu, \"min\": %.1f, \"p10\": %.1f, \"p50\": %.1f, \"p90\": %.1f},\n", b->n,
	       (double)base_min / 1e3, (double)quantile(b, 0.1) / 1e3, (double)base_med / 1e3,
	       (double)quantile(b, 0.9) / 1e3);
	print_q("measure_owd_us", m, 0, false);
	print_q("queue_delay_us", m, base_med, false);
	print_q("queue_delay_corrected_us", &c, 0, false);
	printf("  \"stalls\": %" PRIu64 ", \"stall_ms\": %.1f, \"stall_us\": %.0f,\n", stalls, stall_ms,
	       o->stall_us);
	printf("  \"window_s\": %.3f, \"udp_window_packets\": %" PRIu64 ", \"udp_window_bytes\": %" PRIu64
	       ", \"tcp_connected\": %s, \"tcp_window_bytes\": %" PRIu64 ", \"tcp_total_bytes\": %" PRIu64 "\n}\n",
	       k->win_last_ns > k->win_first_ns ? (double)(k->win_last_ns - k->win_first_ns) / 1e9 : 0.0,
	       k->pkts[LF_MEASURE], k->bytes[LF_MEASURE], k->tcp_seen ? "true" : "false", k->tcp_window, k->tcp_total);
}

static void sink_tcp_read(int *tfd, struct lf_sink *k)
{
	static uint8_t buf[1 << 18];

	for (;;) {
		ssize_t n = read(*tfd, buf, sizeof(buf));

		if (n > 0) {
			k->tcp_total += (uint64_t)n;
			if (k->window)
				k->tcp_window += (uint64_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		k->tcp_eof = true;
		close(*tfd);
		*tfd = -1;
		return;
	}
}

static int run_sink(const struct lf_opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct lf_sink k = { 0 };
	static uint8_t buf[LF_MAX_SIZE + 64];
	int ufd, lfd, tfd = -1, one = 1;
	uint64_t started = mono(), ended_at = 0;

	resolve(o->bind ? o->bind : "0.0.0.0", (unsigned)o->port, &ss, &len);
	ufd = udp_socket(&ss, len, true);
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		die("socket (tcp)");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 4))
		die("bind/listen (tcp)");
	if (o->ready)
		touch(o->ready);
	k.last_rx_mono = started;
	if (o->trace && !(k.trace = fopen(o->trace, "w")))
		die(o->trace);
	for (;;) {
		struct pollfd pfd[3] = { { ufd, POLLIN, 0 }, { lfd, POLLIN, 0 }, { tfd, POLLIN, 0 } };
		uint64_t t;

		if (poll(pfd, tfd >= 0 ? 3 : 2, 50) < 0 && errno != EINTR)
			die("poll");
		for (;;) {
			uint64_t rx_ns;
			int ecn;
			socklen_t fl = sizeof(k.peer);
			struct sockaddr_storage from;
			ssize_t n = recv_stamped(ufd, buf, sizeof(buf), &from, &fl, &rx_ns, &ecn);

			if (n < 0)
				break;
			k.peer = from;
			k.peerlen = fl;
			sink_datagram(ufd, &k, o, buf, n, rx_ns, ecn);
		}
		if (tfd < 0 && !k.tcp_seen) {
			tfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
			if (tfd >= 0) {
				int rbuf = 8 << 20;

				setsockopt(tfd, SOL_SOCKET, SO_RCVBUF, &rbuf, sizeof(rbuf));
				k.tcp_seen = true;
			}
		}
		if (tfd >= 0)
			sink_tcp_read(&tfd, &k);
		t = mono();
		if (k.ended && !ended_at)
			ended_at = t;
		if (k.ended && (tfd < 0 || t - ended_at > 3000000000ull))
			break;
		if ((double)(t - k.last_rx_mono) > o->idle_s * 1e9)
			break;
	}
	if (tfd >= 0)
		close(tfd);
	if (k.trace)
		fclose(k.trace);
	sink_report(o, &k);
	return 0;
}

/* ---- the scalable sender -------------------------------------------------------------- */

#define LF_MIN_CWND 1.0
#define LF_RTO_NS 200000000ull

struct lf_cc {
	double cwnd, ssthresh;       /* packets */
	double alpha;
	double srtt;                 /* ns */
	uint64_t ep_seq, ep_rcvd0, ep_ce0;   /* the window alpha is measured over */
	uint64_t cwr_seq;            /* no new cut until feedback covers this datagram */
	uint64_t rto_seq;            /* datagrams before it are no longer in flight (timeout) */
	bool window_limited;         /* a send waited for the window since the last feedback */
	uint64_t epochs, marked_epochs, cuts, timeouts;
};

struct lf_fb {
	uint64_t rcvd, ce, max_seq, n, last_mono;
	uint64_t rtt_min, rtt_sum, rtt_n;
	bool any;
};

struct lf_sender {
	const struct lf_opts *o;
	int fd;
	unsigned pkt_bytes;          /* the IP packet: payload + UDP + IP header */
	uint64_t seq;                /* datagrams sent so far */
	uint64_t sent[LF_PHASES];
	uint64_t late_ns;            /* schedule given up when woken late */
	struct lf_cc cc;
	struct lf_fb fb;
	FILE *trace;
	/* measure phase */
	double cwnd_time_sum, measure_s;
	uint64_t m_ce0, m_rcvd0, m_cuts0, m_epochs0, m_marked0;
};

static uint64_t inflight(const struct lf_sender *s)
{
	uint64_t done = s->fb.any ? s->fb.max_seq + 1 : 0;

	if (s->cc.rto_seq > done)
		done = s->cc.rto_seq;
	return s->seq > done ? s->seq - done : 0;
}

/* Pacing rate, bytes/s: the window per smoothed RTT, x2 in slow start, x1.2 after. */
static double pacing_rate(const struct lf_sender *s)
{
	double srtt = s->cc.srtt > 20000 ? s->cc.srtt : 20000;

	return (s->cc.cwnd < s->cc.ssthresh ? 2.0 : 1.2) * s->cc.cwnd * s->pkt_bytes / (srtt / 1e9);
}

static void cc_start(struct lf_sender *s)
{
	struct lf_cc *c = &s->cc;

	c->cwnd = 2;
	c->ssthresh = 1e9;
	c->alpha = 1;
	c->ep_seq = c->cwr_seq = s->seq;
	c->ep_rcvd0 = s->fb.rcvd;
	c->ep_ce0 = s->fb.ce;
}

/* DCTCP (RFC 8257) on the receiver's cumulative counts: the first CE fed back in a window cuts
 * cwnd by alpha / 2 (once per window); alpha follows the CE fraction of each window (one RTT of
 * datagrams); without marks the window grows, doubling per RTT in slow start, then by one
 * datagram per RTT, when the window was what held the sender back. */
static void cc_on_feedback(struct lf_sender *s, uint64_t acked, uint64_t new_ce)
{
	struct lf_cc *c = &s->cc;
	const double g = 1.0 / 16;

	if (new_ce && s->fb.max_seq >= c->cwr_seq) {
		c->cwnd *= 1 - c->alpha / 2;
		if (c->cwnd < LF_MIN_CWND)
			c->cwnd = LF_MIN_CWND;
		c->ssthresh = c->cwnd;
		c->cwr_seq = s->seq;
		c->cuts++;
	} else if (acked && !new_ce && s->fb.max_seq >= c->cwr_seq && c->window_limited) {
		c->cwnd += c->cwnd < c->ssthresh ? (double)acked : (double)acked / c->cwnd;
		if (c->cwnd > 1e6)
			c->cwnd = 1e6;
	}
	c->window_limited = false;
	if (s->fb.max_seq >= c->ep_seq) {
		uint64_t d_rcvd = s->fb.rcvd - c->ep_rcvd0, d_ce = s->fb.ce - c->ep_ce0;

		if (d_rcvd) {
			c->alpha = (1 - g) * c->alpha + g * ((double)d_ce / (double)d_rcvd);
			c->epochs++;
			c->marked_epochs += d_ce > 0;
			if (s->trace)
				fprintf(s->trace, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f %.4f %.1f\n",
					now_ns(CLOCK_REALTIME), d_rcvd, d_ce, c->cwnd, c->alpha, c->srtt / 1e3);
		}
		c->ep_seq = s->seq;
		c->ep_rcvd0 = s->fb.rcvd;
		c->ep_ce0 = s->fb.ce;
	}
}

static void sender_read_feedback(struct lf_sender *s, bool control)
{
	uint8_t b[256];

	for (;;) {
		uint64_t rx_ns, rcvd, ce, rtt, acked, new_ce;
		int ecn;
		ssize_t n = recv_stamped(s->fd, b, sizeof(b), NULL, NULL, &rx_ns, &ecn);

		if (n < 0)
			return;
		if (n < (ssize_t)LF_FB_LEN || get32(b) != LF_MAGIC_FB)
			continue;
		rcvd = get64(b + 8);
		ce = get64(b + 16);
		s->fb.n++;
		s->fb.last_mono = mono();
		if (s->fb.any && rcvd <= s->fb.rcvd && ce <= s->fb.ce)
			continue;   /* old news */
		rtt = rx_ns - get64(b + 32) - get64(b + 40);
		if (rtt < 10000000000ull) {
			s->fb.rtt_min = s->fb.rtt_n && s->fb.rtt_min < rtt ? s->fb.rtt_min : rtt;
			s->fb.rtt_sum += rtt;
			s->fb.rtt_n++;
			s->cc.srtt = s->cc.srtt ? 0.875 * s->cc.srtt + 0.125 * (double)rtt : (double)rtt;
		}
		acked = rcvd - s->fb.rcvd;
		new_ce = ce - s->fb.ce;
		s->fb.rcvd = rcvd;
		s->fb.ce = ce;
		s->fb.max_seq = get64(b + 24);
		s->fb.any = true;
		if (control)
			cc_on_feedback(s, acked, new_ce);
	}
}

static void sender_send(struct lf_sender *s, unsigned phase, uint8_t *buf)
{
	put32(buf, LF_MAGIC_DATA);
	buf[4] = (uint8_t)phase;
	put64(buf + 8, s->seq);
	put64(buf + 16, now_ns(CLOCK_REALTIME));
	for (;;) {
		if (send(s->fd, buf, (size_t)s->o->size, 0) >= 0)
			break;
		if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (errno == ECONNREFUSED)  /* an ICMP error from before the sink was up */
			continue;
		die("send");
	}
	if (phase != LF_END) {
		s->seq++;
		s->sent[phase]++;
	}
}

static void sender_report(struct lf_sender *s)
{
	struct lf_cc *c = &s->cc;
	double ms = s->measure_s > 0 ? s->measure_s : 1;

	printf("{\n  \"sent\": %" PRIu64 ", \"sent_base\": %" PRIu64 ", \"sent_warmup\": %" PRIu64
	       ", \"sent_measure\": %" PRIu64 ", \"packet_bytes\": %u, \"ect\": %d,\n",
	       s->seq, s->sent[LF_BASE], s->sent[LF_WARMUP], s->sent[LF_MEASURE], s->pkt_bytes, s->o->ect);
	printf("  \"feedback\": %" PRIu64 ", \"acked\": %" PRIu64 ", \"ce_fed_back\": %" PRIu64
	       ", \"rtt_min_us\": %.1f, \"rtt_mean_us\": %.1f,\n",
	       s->fb.n, s->fb.rcvd, s->fb.ce, (double)s->fb.rtt_min / 1e3,
	       s->fb.rtt_n ? (double)s->fb.rtt_sum / (double)s->fb.rtt_n / 1e3 : 0.0);
	printf("  \"epochs\": %" PRIu64 ", \"marked_epochs\": %" PRIu64 ", \"cuts\": %" PRIu64
	       ", \"timeouts\": %" PRIu64 ", \"alpha\": %.4f, \"cwnd\": %.3f, \"late_ms\": %.1f,\n",
	       c->epochs, c->marked_epochs, c->cuts, c->timeouts, c->alpha, c->cwnd, (double)s->late_ns / 1e6);
	printf("  \"measure\": {\"seconds\": %.3f, \"cwnd_mean\": %.3f, "
	       "\"ce_fed_back\": %" PRIu64 ", \"acked\": %" PRIu64 ", \"cuts\": %" PRIu64 ", \"epochs\": %" PRIu64
	       ", \"marked_epochs\": %" PRIu64 "}\n}\n",
	       s->measure_s, s->cwnd_time_sum / ms, s->fb.ce - s->m_ce0,
	       s->fb.rcvd - s->m_rcvd0, c->cuts - s->m_cuts0, c->epochs - s->m_epochs0, c->marked_epochs - s->m_marked0);
}

static int run_send(const struct lf_opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct lf_sender s = { .o = o };
	static uint8_t buf[LF_MAX_SIZE];
	uint64_t t0, next, last_tick, t_base, t_warm, t_end;
	unsigned phase = LF_BASE;
	int tos = o->ect;

	if (!o->dst)
		usage("--dst is required");
	resolve(o->dst, (unsigned)o->port, &ss, &len);
	s.fd = udp_socket(&ss, len, false);
	if (ss.ss_family == AF_INET6 ? setsockopt(s.fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
				     : setsockopt(s.fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)))
		die("IP_TOS / IPV6_TCLASS");
	s.pkt_bytes = (unsigned)o->size + 8 + (ss.ss_family == AF_INET6 ? 40 : 20);
	if (o->trace && !(s.trace = fopen(o->trace, "w")))
		die(o->trace);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	t0 = next = last_tick = mono();
	t_base = t0 + (uint64_t)(o->base_s * 1e9);
	t_warm = t_base + (uint64_t)(o->warmup_s * 1e9);
	t_end = t_warm + (uint64_t)(o->seconds * 1e9);
	s.fb.last_mono = t0;
	for (;;) {
		uint64_t now = mono(), gap, wait = 10000000;
		struct timespec ts;
		struct pollfd pfd = { s.fd, POLLIN, 0 };
		bool open;

		if (phase == LF_BASE && now >= t_base) {
			phase = LF_WARMUP;
			cc_start(&s);
			s.fb.last_mono = now;
			if (o->ready)
				touch(o->ready);
		}
		if (phase == LF_WARMUP && now >= t_warm) {
			phase = LF_MEASURE;
			s.m_ce0 = s.fb.ce;
			s.m_rcvd0 = s.fb.rcvd;
			s.m_cuts0 = s.cc.cuts;
			s.m_epochs0 = s.cc.epochs;
			s.m_marked0 = s.cc.marked_epochs;
		}
		if (now >= t_end)
			break;
		if (phase == LF_MEASURE) {
			double dt = (double)(now - last_tick) / 1e9;

			s.cwnd_time_sum += s.cc.cwnd * dt;
			s.measure_s += dt;
		}
		last_tick = now;
		if (phase != LF_BASE && inflight(&s) && now - s.fb.last_mono > LF_RTO_NS) {
			/* no feedback for 200 ms: what is in flight is taken as lost */
			s.cc.ssthresh = s.cc.cwnd / 2 > LF_MIN_CWND ? s.cc.cwnd / 2 : LF_MIN_CWND;
			s.cc.cwnd = LF_MIN_CWND;
			s.cc.rto_seq = s.seq;
			s.cc.timeouts++;
			s.fb.last_mono = now;
		}
		if (phase == LF_BASE) {
			gap = (uint64_t)(1e9 / o->base_pps);
			open = true;
		} else {
			gap = (uint64_t)(s.pkt_bytes / pacing_rate(&s) * 1e9);
			open = (double)inflight(&s) < s.cc.cwnd;
			if (!open && now >= next)
				s.cc.window_limited = true;
		}
		if (open && now >= next) {
			sender_send(&s, phase, buf);
			if (now - next > gap) {   /* woken late: at most one datagram more */
				s.late_ns += now - next - gap;
				next = now - gap;
			}
			next += gap;
		}
		sender_read_feedback(&s, phase != LF_BASE);
		now = mono();
		if (next > now)
			wait = next - now;
		else if (phase != LF_BASE && (double)inflight(&s) >= s.cc.cwnd)
			wait = 1000000;   /* the window is full: the next feedback wakes us */
		else
			continue;
		ts.tv_sec = (time_t)(wait / 1000000000u);
		ts.tv_nsec = (long)(wait % 1000000000u);
		if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
			die("ppoll");
	}
	for (int i = 0; i < 3; i++) {
		struct timespec ts = { 0, 1000000 };

		sender_send(&s, LF_END, buf);
		nanosleep(&ts, NULL);
	}
	{
		uint64_t until = mono() + 150000000ull;   /* the end marker's feedback too */

		while (mono() < until) {
			struct pollfd pfd = { s.fd, POLLIN, 0 };

			poll(&pfd, 1, 10);
			sender_read_feedback(&s, false);
		}
	}
	if (s.trace)
		fclose(s.trace);
	sender_report(&s);
	return 0;
}

/* ---- bulk TCP ------------------------------------------------------------------------- */

static int run_bulk(const struct lf_opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len, il;
	static uint8_t buf[1 << 16];
	struct tcp_info ti;
	char cc[32] = "";
	int fd;
	uint64_t end, sent = 0;

	if (!o->dst)
		usage("--dst is required");
	resolve(o->dst, (unsigned)o->port, &ss, &len);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket (tcp)");
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->cc, (socklen_t)strlen(o->cc)))
		die("TCP_CONGESTION");
	if (connect(fd, (struct sockaddr *)&ss, len))
		die("connect (tcp)");
	end = mono() + (uint64_t)(o->seconds * 1e9);
	while (mono() < end) {
		struct pollfd pfd = { fd, POLLOUT, 0 };
		ssize_t n;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			sent += (uint64_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			die("send (tcp)");
	}
	len = sizeof(cc);
	getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len);
	cc[sizeof(cc) - 1] = '\0';
	il = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &il))
		die("TCP_INFO");
	printf("{\"cc\": \"%s\", \"ecn\": %s, \"ecn_seen\": %s, \"written\": %" PRIu64 ", \"bytes_acked\": %llu, "
	       "\"retrans\": %u, \"delivered_ce\": %u, \"cwnd\": %u, \"rtt_us\": %u}\n",
	       cc, ti.tcpi_options & TCPI_OPT_ECN ? "true" : "false",
	       ti.tcpi_options & TCPI_OPT_ECN_SEEN ? "true" : "false", sent, (unsigned long long)ti.tcpi_bytes_acked,
	       ti.tcpi_total_retrans, ti.tcpi_delivered_ce, ti.tcpi_snd_cwnd, ti.tcpi_rtt);
	shutdown(fd, SHUT_WR);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct lf_opts o;

	if (argc < 2)
		usage("a mode is required");
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	parse(&o, argc, argv);
	if (!strcmp(argv[1], "sink"))
		return run_sink(&o);
	if (!strcmp(argv[1], "send"))
		return run_send(&o);
	if (!strcmp(argv[1], "bulk"))
		return run_bulk(&o);
	usage(argv[1]);
	return 2;
}
