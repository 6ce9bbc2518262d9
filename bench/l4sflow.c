/* tl-l4sflow: a scalable (L4S, RFC 9331) paced UDP sender, its receiver, and a bulk TCP flow,
 * for the lab test of the AQM's L4S step (tests/integration/test_l4s.sh). The lab kernel has
 * neither DCTCP nor Prague, so the scalable congestion control is this sender's:
 *
 *   send   paces datagrams at a rate, every one ECT(1) (IP_TOS / IPV6_TCLASS), numbered and
 *          stamped with its send time (CLOCK_REALTIME: the lab's namespaces share the clock).
 *          The receiver's feedback (below) carries the cumulative count of datagrams received
 *          and of those that arrived CE. Once per round trip (an epoch: from the first
 *          datagram sent in it until feedback covers it, at least --epoch-us), the sender
 *          takes the fraction F of the epoch's datagrams that were marked and, as DCTCP
 *          (RFC 8257) and Prague do, keeps alpha <- (1 - g) alpha + g F (g = 1/16, alpha
 *          starts at 1) and cuts its rate to rate (1 - alpha / 2) in an epoch with marks;
 *          in one without, it adds one datagram per reference round trip per reference round
 *          trip (Prague's RTT independence: as if the RTT were --ref-rtt-ms, 25 ms), only
 *          when it used the rate it had (an application- or CPU-limited sender does not
 *          grow). Until the first mark it doubles the rate per epoch (slow start). With no
 *          feedback for 200 ms it halves the rate. A sender woken late sends at most one
 *          datagram more than its schedule, then keeps the schedule from now (no bursts).
 *          Phases, in the datagrams: base (a low fixed rate, no control, --base-s), warm-up
 *          (--warmup-s), measure (--seconds), then an end marker. --ready FILE is created
 *          when the base phase is over. Prints a JSON summary (rates, epochs, marks fed back,
 *          cuts) on stdout.
 *   sink   receives the datagrams (kernel receive time SO_TIMESTAMPNS, ECN field IP_RECVTOS /
 *          IPV6_RECVTCLASS) and sends feedback to their source at most every --feedback-us
 *          (at each arrival after that much time, and at the end marker). It also accepts
 *          one TCP connection on the same port and counts the bytes it reads while the
 *          measurement window is open (from the first measure datagram to the end marker).
 *          Exits after the end marker once the TCP peer closed (or 3 s later), or after
 *          --idle-s without any datagram. Prints a JSON summary: the base one-way delay
 *          (min, p10, median of the base phase), the measure phase's one-way delay and queue
 *          delay (one-way delay minus the base median and minus the base minimum) quantiles,
 *          ECN codepoints per phase, datagrams missing, bytes in the window of both flows.
 *   --trace FILE: one line per datagram received (sink: receive time ns, phase, number, one-way
 *          delay us, ECN field) or per epoch (send: time ns, datagrams and CE in it, new rate
 *          Mbit/s, alpha, epoch ms).
 *   bulk   one TCP flow as fast as it goes for --seconds, with the congestion control
 *          --cc (default cubic); prints whether ECN was negotiated and the kernel's counters.
 *
 * Usage:
 *   tl-l4sflow sink --port P [--bind ADDR] [--feedback-us U] [--idle-s S] [--ready FILE] [--trace FILE]
 *   tl-l4sflow send --dst ADDR --port P [--size B] [--ect 1|0|none] [--base-s S] [--base-pps N]
 *                   [--warmup-s S] [--seconds S] [--epoch-us U] [--ref-rtt-ms M] [--start-bps R]
 *                   [--ready FILE] [--trace FILE]
 *   tl-l4sflow bulk --dst ADDR --port P --seconds S [--cc NAME]
 */
#include <arpa/inet.h>
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

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- options ------------------------------------------------------------------------ */

struct lf_opts {
	const char *dst, *bind, *ready, *cc, *trace;
	unsigned port, size, base_pps;
	int ect;                   /* ECN field: 1, 2 or 0 */
	double base_s, warmup_s, seconds, idle_s, ref_rtt_ms, start_bps;
	uint64_t feedback_ns, epoch_ns;
};

static double num(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double d = strtod(v, &end);

	if (*v == '\0' || *end != '\0' || !(d >= lo && d <= hi)) {
		fprintf(stderr, "tl-l4sflow: %s %s: not a number in [%g, %g]\n", opt, v, lo, hi);
		exit(2);
	}
	return d;
}

static void parse(struct lf_opts *o, int argc, char **argv)
{
	*o = (struct lf_opts){ .bind = NULL, .cc = "cubic", .size = 1200, .base_pps = 200, .ect = 1,
			       .base_s = 2, .warmup_s = 3, .seconds = 10, .idle_s = 10, .ref_rtt_ms = 25,
			       .start_bps = 1e6, .feedback_ns = 1000000, .epoch_ns = 1000000 };
	for (int i = 2; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage("option without a value");
		if (!strcmp(k, "--dst"))
			o->dst = v;
		else if (!strcmp(k, "--bind"))
			o->bind = v;
		else if (!strcmp(k, "--ready"))
			o->ready = v;
		else if (!strcmp(k, "--trace"))
			o->trace = v;
		else if (!strcmp(k, "--cc"))
			o->cc = v;
		else if (!strcmp(k, "--port"))
			o->port = (unsigned)num(k, v, 1, 65535);
		else if (!strcmp(k, "--size"))
			o->size = (unsigned)num(k, v, LF_HDR, LF_MAX_SIZE);
		else if (!strcmp(k, "--base-pps"))
			o->base_pps = (unsigned)num(k, v, 1, 100000);
		else if (!strcmp(k, "--ect"))
			o->ect = !strcmp(v, "none") ? 0 : !strcmp(v, "0") ? 2 : !strcmp(v, "1") ? 1 : -1;
		else if (!strcmp(k, "--base-s"))
			o->base_s = num(k, v, 0, 3600);
		else if (!strcmp(k, "--warmup-s"))
			o->warmup_s = num(k, v, 0, 3600);
		else if (!strcmp(k, "--seconds"))
			o->seconds = num(k, v, 0.1, 3600);
		else if (!strcmp(k, "--idle-s"))
			o->idle_s = num(k, v, 0.1, 3600);
		else if (!strcmp(k, "--ref-rtt-ms"))
			o->ref_rtt_ms = num(k, v, 0.1, 10000);
		else if (!strcmp(k, "--start-bps"))
			o->start_bps = num(k, v, 1e4, 1e11);
		else if (!strcmp(k, "--feedback-us"))
			o->feedback_ns = (uint64_t)num(k, v, 10, 1e7) * 1000;
		else if (!strcmp(k, "--epoch-us"))
			o->epoch_ns = (uint64_t)num(k, v, 10, 1e7) * 1000;
		else
			usage(k);
	}
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
	uint8_t fb[LF_FB_LEN];

	put32(fb, LF_MAGIC_FB);
	put32(fb + 4, 0);
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
		if (k->window)
			k->window = false;
		k->ended = true;
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
	if (mono() - k->last_fb >= o->feedback_ns)
		sink_feedback(fd, k);
}

static void print_q(const char *name, struct lf_vec *a, int64_t base, bool last)
{
	printf("  \"%s\": {\"n\": %zu, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, \"p99_9\": %.1f, \"max\": %.1f}%s\n",
	       name, a->n, (double)(quantile(a, 0.5) - base) / 1e3, (double)(quantile(a, 0.9) - base) / 1e3,
	       (double)(quantile(a, 0.99) - base) / 1e3, (double)(quantile(a, 0.999) - base) / 1e3,
	       (double)(a->n ? a->v[a->n - 1] - base : 0) / 1e3, last ? "" : ",");
}

static void sink_report(const struct lf_opts *o, struct lf_sink *k)
{
	struct lf_vec *b = &k->owd[LF_BASE], *m = &k->owd[LF_MEASURE];
	int64_t base_min, base_med;

	(void)o;
	for (int p = 0; p < LF_PHASES; p++)
		if (k->owd[p].n)
			qsort(k->owd[p].v, k->owd[p].n, sizeof(int64_t), cmp64);
	base_min = b->n ? b->v[0] : 0;
	base_med = quantile(b, 0.5);
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
	print_q("queue_delay_from_min_us", m, base_min, false);
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

	resolve(o->bind ? o->bind : "0.0.0.0", o->port, &ss, &len);
	ufd = udp_socket(&ss, len, true);
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		die("socket (tcp)");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 4))
		die("bind/listen (tcp)");
	if (o->ready) {
		FILE *f = fopen(o->ready, "w");

		if (!f)
			die(o->ready);
		fclose(f);
	}
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

struct lf_cc {
	double rate;                 /* bytes/s of IP packets */
	double alpha;
	bool slow_start;
	uint64_t ep_start, ep_seq, ep_rcvd0, ep_ce0, ep_bytes0;
	double ep_rate;              /* the rate in force during the epoch */
	uint64_t epochs, marked_epochs, cuts, increases, timeouts;
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
	uint64_t seq, bytes;         /* datagrams and bytes sent so far */
	uint64_t sent[LF_PHASES];
	uint64_t late_ns;            /* schedule given up when woken late */
	struct lf_cc cc;
	struct lf_fb fb;
	FILE *trace;
	/* measure phase */
	double rate_time_sum, rate_min, rate_max, measure_s;
	uint64_t m_ce0, m_rcvd0, m_cuts0, m_epochs0, m_marked0;
};

static void cc_epoch_start(struct lf_sender *s, uint64_t now)
{
	struct lf_cc *c = &s->cc;

	c->ep_start = now;
	c->ep_seq = s->seq;
	c->ep_rcvd0 = s->fb.rcvd;
	c->ep_ce0 = s->fb.ce;
	c->ep_bytes0 = s->bytes;
	c->ep_rate = c->rate;
}

/* The epoch is over when feedback covers its first datagram and it lasted --epoch-us. */
static void cc_on_feedback(struct lf_sender *s, uint64_t now)
{
	struct lf_cc *c = &s->cc;
	const double g = 1.0 / 16;
	uint64_t d_rcvd, d_ce;
	double dur, floor_rate, ref = s->o->ref_rtt_ms / 1e3;

	if (s->fb.max_seq < c->ep_seq || now - c->ep_start < s->o->epoch_ns)
		return;
	d_rcvd = s->fb.rcvd - c->ep_rcvd0;
	d_ce = s->fb.ce - c->ep_ce0;
	dur = (double)(now - c->ep_start) / 1e9;
	if (!d_rcvd)
		return;
	c->epochs++;
	c->alpha = (1 - g) * c->alpha + g * ((double)d_ce / (double)d_rcvd);
	if (d_ce) {
		c->marked_epochs++;
		c->slow_start = false;
		c->rate *= 1 - c->alpha / 2;
		c->cuts++;
	} else if ((double)(s->bytes - c->ep_bytes0) >= 0.8 * c->ep_rate * dur) {
		/* used the rate it had: grow (not when held back by the CPU or the application) */
		if (c->slow_start)
			c->rate *= 2;
		else
			c->rate += (double)s->pkt_bytes / (ref * ref) * dur;
		c->increases++;
	}
	floor_rate = 2.0 * s->pkt_bytes / ref;
	if (c->rate < floor_rate)
		c->rate = floor_rate;
	if (c->rate > 1.25e10)
		c->rate = 1.25e10;
	if (s->trace)
		fprintf(s->trace, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f %.4f %.3f\n", now_ns(CLOCK_REALTIME), d_rcvd,
			d_ce, c->rate * 8 / 1e6, c->alpha, dur * 1e3);
	cc_epoch_start(s, now);
}

static void sender_read_feedback(struct lf_sender *s, bool control)
{
	uint8_t b[256];

	for (;;) {
		uint64_t rx_ns, now;
		int ecn;
		ssize_t n = recv_stamped(s->fd, b, sizeof(b), NULL, NULL, &rx_ns, &ecn);

		if (n < 0)
			return;
		if (n < (ssize_t)LF_FB_LEN || get32(b) != LF_MAGIC_FB)
			continue;
		now = mono();
		if (get64(b + 8) >= s->fb.rcvd) {
			uint64_t rtt = now_ns(CLOCK_REALTIME) - get64(b + 32) - get64(b + 40);

			s->fb.rcvd = get64(b + 8);
			s->fb.ce = get64(b + 16);
			s->fb.max_seq = get64(b + 24);
			s->fb.any = true;
			if (rtt < 10000000000ull) {
				s->fb.rtt_min = s->fb.rtt_n && s->fb.rtt_min < rtt ? s->fb.rtt_min : rtt;
				s->fb.rtt_sum += rtt;
				s->fb.rtt_n++;
			}
		}
		s->fb.n++;
		s->fb.last_mono = now;
		if (control)
			cc_on_feedback(s, now);
	}
}

static void sender_send(struct lf_sender *s, unsigned phase, uint8_t *buf)
{
	put32(buf, LF_MAGIC_DATA);
	buf[4] = (uint8_t)phase;
	put64(buf + 8, s->seq);
	put64(buf + 16, now_ns(CLOCK_REALTIME));
	for (;;) {
		if (send(s->fd, buf, s->o->size, 0) >= 0)
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
		s->bytes += s->pkt_bytes;
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
	       ", \"increases\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", \"alpha\": %.4f, \"late_ms\": %.1f,\n",
	       c->epochs, c->marked_epochs, c->cuts, c->increases, c->timeouts, c->alpha, (double)s->late_ns / 1e6);
	printf("  \"measure\": {\"seconds\": %.3f, \"rate_mean_mbit\": %.3f, \"rate_min_mbit\": %.3f, "
	       "\"rate_max_mbit\": %.3f, \"ce_fed_back\": %" PRIu64 ", \"acked\": %" PRIu64 ", \"cuts\": %" PRIu64
	       ", \"epochs\": %" PRIu64 ", \"marked_epochs\": %" PRIu64 "}\n}\n",
	       s->measure_s, s->rate_time_sum / ms * 8 / 1e6, s->rate_min * 8 / 1e6, s->rate_max * 8 / 1e6,
	       s->fb.ce - s->m_ce0, s->fb.rcvd - s->m_rcvd0, c->cuts - s->m_cuts0, c->epochs - s->m_epochs0,
	       c->marked_epochs - s->m_marked0);
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
	resolve(o->dst, o->port, &ss, &len);
	s.fd = udp_socket(&ss, len, false);
	if (ss.ss_family == AF_INET6 ? setsockopt(s.fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
				     : setsockopt(s.fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)))
		die("IP_TOS / IPV6_TCLASS");
	s.pkt_bytes = o->size + 8 + (ss.ss_family == AF_INET6 ? 40 : 20);
	if (o->trace && !(s.trace = fopen(o->trace, "w")))
		die(o->trace);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	t0 = next = last_tick = mono();
	t_base = t0 + (uint64_t)(o->base_s * 1e9);
	t_warm = t_base + (uint64_t)(o->warmup_s * 1e9);
	t_end = t_warm + (uint64_t)(o->seconds * 1e9);
	s.cc.rate = (double)o->base_pps * s.pkt_bytes;
	s.fb.last_mono = t0;
	for (;;) {
		uint64_t now = mono(), gap;
		struct timespec ts;
		struct pollfd pfd = { s.fd, POLLIN, 0 };

		if (phase == LF_BASE && now >= t_base) {
			phase = LF_WARMUP;
			s.cc.rate = o->start_bps / 8;
			s.cc.alpha = 1;
			s.cc.slow_start = true;
			cc_epoch_start(&s, now);
			s.fb.last_mono = now;
			if (o->ready) {
				FILE *f = fopen(o->ready, "w");

				if (!f)
					die(o->ready);
				fclose(f);
			}
		}
		if (phase == LF_WARMUP && now >= t_warm) {
			phase = LF_MEASURE;
			s.rate_min = s.rate_max = s.cc.rate;
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

			s.rate_time_sum += s.cc.rate * dt;
			s.measure_s += dt;
			if (s.cc.rate < s.rate_min)
				s.rate_min = s.cc.rate;
			if (s.cc.rate > s.rate_max)
				s.rate_max = s.cc.rate;
		}
		last_tick = now;
		if (phase != LF_BASE && now - s.fb.last_mono > 200000000ull) {
			s.cc.rate /= 2;   /* no feedback for 200 ms */
			s.cc.timeouts++;
			s.fb.last_mono = now;
		}
		gap = (uint64_t)(s.pkt_bytes / s.cc.rate * 1e9);
		if (now >= next) {
			sender_send(&s, phase, buf);
			if (now - next > gap) {   /* woken late: at most one datagram more */
				s.late_ns += now - next - gap;
				next = now - gap;
			}
			next += gap;
		}
		sender_read_feedback(&s, phase != LF_BASE);
		now = mono();
		if (next > now) {
			ts.tv_sec = (time_t)((next - now) / 1000000000u);
			ts.tv_nsec = (long)((next - now) % 1000000000u);
			if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
				die("ppoll");
		}
	}
	for (int i = 0; i < 3; i++) {
		struct timespec ts = { 0, 1000000 };

		sender_send(&s, LF_END, buf);
		nanosleep(&ts, NULL);
	}
	{
		uint64_t until = mono() + 300000000ull;

		while (mono() < until && s.fb.rcvd < s.seq) {
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
	resolve(o->dst, o->port, &ss, &len);
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
