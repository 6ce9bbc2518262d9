/* Control-plane harness (see ctrl_harness.h): a device built as the daemon builds it, remote
 * peers played with the handshake functions, and views of the index table for the tests. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "ctrl/aips.h"
#include "ctrl/handshake.h"
#include "ctrl/peer.h"
#include "ctrl/ratelimit.h"
#include "ctrl/timers.h"
#include "ctrl_harness.h"
#include "dataplane/packet.h"
#include "dataplane/runtime.h"
#include "test_eal.h"

#define RING_SIZE 1024

static const uint8_t WAN_MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x0c, 0x01 };
static const uint8_t WAN_IP4[4] = { 192, 0, 2, 1 };

static unsigned setups;                  /* makes the port names unique */
static cpu_set_t process_cpus;           /* before EAL pinned this thread */

int tl_ch_eal_init(const char *argv0)
{
	tl_ch_save_cpus();
	return tl_test_eal_init(argv0, "tl_ch");
}

void tl_ch_save_cpus(void)
{
	CPU_ZERO(&process_cpus);
	sched_getaffinity(0, sizeof(process_cpus), &process_cpus);
}

void tl_ch_eal_fini(void)
{
	tl_test_eal_fini();
}

/* Protocol timers and limits as the configuration defaults them. */
static void config_init(struct tl_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "tlch");
	c->mode = TL_MODE_HOST;
	c->listen_port = TL_CH_LISTEN_PORT;
	c->mtu = 1420;
	c->workers = 1;
	c->handshake_threads = TL_CH_HS_THREADS;
	c->staged_packets = 128;
	c->timers = (struct tl_cfg_timers){
		.rekey_after_time = 120, .reject_after_time = 180, .rekey_attempt_time = 90,
		.rekey_timeout = 5, .keepalive_timeout = 10,
		.rekey_after_messages = 1ull << 60, .reject_after_messages = UINT64_MAX - (1ull << 13),
	};
	tl_random(c->private_key, sizeof(c->private_key));
}

static void dp_params(struct tl_ch *h)
{
	struct tl_dp *dp = &h->dev.dp;
	const struct tl_cfg_timers *t = &h->cfg.timers;

	dp->n_workers = 1;
	dp->n_queues = 1;
	dp->listen_port = h->cfg.listen_port;
	dp->mtu = h->cfg.mtu;
	dp->host_mode = true;
	dp->limits.rekey_after_time_ns = (uint64_t)(t->rekey_after_time * 1e9);
	dp->limits.reject_after_time_ns = (uint64_t)(t->reject_after_time * 1e9);
	dp->limits.rekey_after_messages = t->rekey_after_messages;
	dp->limits.reject_after_messages = t->reject_after_messages;
	memcpy(dp->port[TL_PORT_WAN].mac, WAN_MAC, 6);
	memcpy(dp->port[TL_PORT_WAN].ip4, WAN_IP4, 4);
	dp->port[TL_PORT_WAN].has_ip4 = true;
	for (int role = 0; role < TL_PORT_MAX; role++) {
		dp->aqm_init[role] = tl_aqm_params_default();
		dp->queue_cap[role] = tl_aqm_capacity(&dp->aqm_init[role]);
	}
}

static int port_create(struct tl_ch *h, int role)
{
	char name[32];
	int id;

	snprintf(name, sizeof(name), "net_ring_ch%u%s", setups, role == TL_PORT_WAN ? "wan" : "lan");
	id = tl_test_ring_port(name, RING_SIZE, h->pool, &h->rx[role], &h->tx[role]);
	if (id < 0)
		return -1;
	h->dev.dp.port[role].port_id = (uint16_t)id;
	return 0;
}

int tl_ch_setup(struct tl_ch *h)
{
	struct tl_device *dev = &h->dev;
	char name[32];

	memset(h, 0, sizeof(*h));
	setups++;
	h->now = 3600 * TL_NS;
	config_init(&h->cfg);
	dev->cfg = &h->cfg;
	dev->cpus = process_cpus;
	dev->udp_fd[0] = dev->udp_fd[1] = -1;
	TAILQ_INIT(&dev->peers);
	pthread_mutex_init(&dev->lock, NULL);
	tl_identity_set(&dev->id, h->cfg.private_key);
	tl_cookie_checker_init(&dev->cookies, &dev->id);
	dp_params(h);
	if (tl_device_objects_create(dev) != 0) {
		printf("device objects: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	snprintf(name, sizeof(name), "ch%u_pool", setups);
	h->pool = rte_pktmbuf_pool_create(name, 2047, 0, TL_HS_PRIV, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (!h->pool || port_create(h, TL_PORT_WAN) != 0 || port_create(h, TL_PORT_LAN) != 0) {
		printf("harness ports: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if (tl_worker_init(&dev->workers[0], 0, &dev->dp) != 0 || tl_aips_publish(dev) != 0) {
		printf("harness worker / table: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	rte_rcu_qsbr_thread_register(dev->dp.qsbr, 0);
	return 0;
}

void tl_ch_teardown(struct tl_ch *h)
{
	struct tl_device *dev = &h->dev;

	tl_ch_worker_stop(h);
	rte_rcu_qsbr_thread_unregister(dev->dp.qsbr, 0);
	dev->dp.stop = true;          /* as the daemon stops: every peer wiped and freed at once */
	tl_peers_destroy_all(dev);
	tl_worker_fini(&dev->workers[0]);
	for (int role = 0; role < TL_PORT_MAX; role++)
		tl_test_ring_port_free(dev->dp.port[role].port_id, h->rx[role], h->tx[role]);
	tl_device_objects_free(dev);
	rte_mempool_free(h->pool);
	tl_identity_clear(&dev->id);
	pthread_mutex_destroy(&dev->lock);
	memset(h, 0, sizeof(*h));
}

struct tl_peer_ctrl *tl_ch_peer_add(struct tl_ch *h, struct tl_ch_remote *r, uint8_t host)
{
	struct tl_device *dev = &h->dev;
	uint8_t priv[TL_KEY_LEN];
	struct tl_prefix aip = { .ip.family = AF_INET, .ip.addr = { 10, host }, .len = 16 };
	struct tl_cfg_peer cfg = { .allowed_ips = &aip, .n_allowed_ips = 1, .has_endpoint = true };
	struct tl_peer_ctrl *pc;

	memset(r, 0, sizeof(*r));
	tl_random(priv, sizeof(priv));
	tl_identity_set(&r->id, priv);
	tl_wipe(priv, sizeof(priv));
	tl_handshake_init(&r->hs, &r->id, dev->id.pub, NULL);
	tl_handshake_init(&r->resp_hs, &r->id, dev->id.pub, NULL);
	tl_cookie_checker_init(&r->cookies, &r->id);
	r->at.mac[0] = 0x02;
	r->at.mac[5] = host;
	r->at.ip4[0] = 192;
	r->at.ip4[2] = 2;
	r->at.ip4[3] = host;
	r->at.has_ip4 = true;
	r->port = TL_CH_LISTEN_PORT;
	r->tai = 1;
	memcpy(cfg.public_key, r->id.pub, TL_KEY_LEN);
	cfg.endpoint.ip.family = AF_INET;
	memcpy(cfg.endpoint.ip.addr, r->at.ip4, 4);
	cfg.endpoint.port = r->port;
	if (tl_peer_add(dev, &cfg) != 0 || !(pc = tl_peer_find(dev, r->id.pub)))
		return NULL;
	tl_peer_set_endpoint(dev, pc, &cfg.endpoint, r->at.mac);
	return tl_aips_publish(dev) == 0 ? pc : NULL;
}

struct rte_mbuf *tl_ch_frame(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len)
{
	struct tl_endpoint us = { .family = AF_INET, .port = TL_CH_LISTEN_PORT, .mac_valid = true };
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->pool);
	void *p;

	if (!m)
		return NULL;
	memcpy(us.ip, WAN_IP4, 4);
	memcpy(us.mac, WAN_MAC, 6);
	p = rte_pktmbuf_append(m, (uint16_t)len);
	if (!p || tl_pkt_push_outer(m, &r->at, &us, r->port, 0) != 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy((uint8_t *)p, msg, len);
	return m;
}

struct rte_mbuf *tl_ch_hs_msg(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len)
{
	struct rte_mbuf *m = tl_ch_frame(h, r, msg, len);

	/* the frame's outer headers parsed off into the private area, as a worker does */
	if (m && tl_pkt_parse_outer(m, &h->dev.dp.port[TL_PORT_WAN], tl_dp_listen_port(&h->dev.dp), tl_hs_outer(m)) !=
		 TL_DROP_MAX) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

void tl_ch_deliver(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len)
{
	struct rte_mbuf *m = tl_ch_hs_msg(h, r, msg, len);

	if (m)
		tl_handshake_rx(&h->dev, m, h->now);
}

int tl_ch_take(struct tl_ch *h, const struct tl_ch_remote *r, uint32_t type, void *out, size_t len)
{
	struct rte_mbuf *m;
	struct tl_outer o;

	while (rte_ring_dequeue(h->dev.workers[0].ctrl_tx, (void **)&m) == 0) {
		int got = -1;

		if (tl_pkt_parse_outer(m, &r->at, r->port, &o) == TL_DROP_MAX && m->data_len >= 4 &&
		    tl_load32(rte_pktmbuf_mtod(m, void *)) == type) {
			got = m->data_len < len ? m->data_len : (int)len;
			memcpy(out, rte_pktmbuf_mtod(m, void *), (size_t)got);
		}
		rte_pktmbuf_free(m);
		if (got >= 0)
			return got;
	}
	return -1;
}

unsigned tl_ch_discard(struct tl_ch *h)
{
	struct rte_mbuf *m;
	unsigned n = 0;

	for (; rte_ring_dequeue(h->dev.workers[0].ctrl_tx, (void **)&m) == 0; n++)
		rte_pktmbuf_free(m);
	return n;
}

/* A TAI64N label that grows with every initiation of r. */
static void remote_timestamp(struct tl_ch_remote *r, uint8_t ts[TL_TIMESTAMP_LEN])
{
	uint64_t sec = 0x4000000000000000ull + 1700000000ull + r->tai++;

	memset(ts, 0, TL_TIMESTAMP_LEN);
	for (int i = 0; i < 8; i++)
		ts[i] = (uint8_t)(sec >> (56 - 8 * i));
}

int tl_ch_remote_initiation(struct tl_ch *h, struct tl_ch_remote *r, struct tl_msg_initiation *out)
{
	uint8_t ts[TL_TIMESTAMP_LEN];

	remote_timestamp(r, ts);
	r->index = tl_random_u32() | 1;
	return tl_noise_create_initiation(out, &r->hs, &r->id, r->index, ts, h->now) == TL_NOISE_OK ? 0 : -1;
}

static struct tl_handshake *remote_static(void *arg, const uint8_t pub[TL_KEY_LEN])
{
	struct tl_ch_remote *r = arg;

	return !memcmp(pub, r->resp_hs.remote_static, TL_KEY_LEN) ? &r->resp_hs : NULL;
}

int tl_ch_remote_respond(struct tl_ch *h, struct tl_ch_remote *r, const struct tl_msg_initiation *ours,
			 struct tl_msg_response *out)
{
	struct tl_handshake *hs;

	/* Our timestamps come from the realtime clock, coarser than a test's pace: the remote
	 * takes each of our initiations as new. */
	memset(r->resp_hs.latest_timestamp, 0, TL_TIMESTAMP_LEN);
	r->index = tl_random_u32() | 1;
	if (tl_noise_consume_initiation(ours, &r->id, remote_static, r, h->now, &hs) != TL_NOISE_OK ||
	    tl_noise_create_response(out, hs, r->index, h->now) != TL_NOISE_OK)
		return -1;
	return tl_noise_derive_session(hs, &r->keys) == TL_NOISE_OK ? 0 : -1;
}

static struct tl_handshake *remote_index(void *arg, uint32_t index)
{
	struct tl_ch_remote *r = arg;

	return index == r->index ? &r->hs : NULL;
}

int tl_ch_remote_complete(struct tl_ch *h, struct tl_ch_remote *r, const struct tl_msg_response *ours)
{
	struct tl_handshake *hs;

	(void)h;
	if (tl_noise_consume_response(ours, &r->id, remote_index, r, &hs) != TL_NOISE_OK)
		return -1;
	return tl_noise_derive_session(hs, &r->keys) == TL_NOISE_OK ? 0 : -1;
}

void tl_ch_remote_cookie(struct tl_ch *h, struct tl_ch_remote *r, const void *ours, size_t len,
			 uint32_t sender, struct tl_msg_cookie *out)
{
	tl_cookie_create_reply(out, &r->cookies, ours, len, sender, WAN_IP4, 4, TL_CH_LISTEN_PORT, h->now);
}

void tl_ch_tick(struct tl_ch *h)
{
	tl_timers_run(&h->dev, h->now);
}

unsigned tl_ch_worker_round(struct tl_ch *h)
{
	struct tl_worker *w = &h->dev.workers[0];
	unsigned n;

	rte_rcu_qsbr_thread_online(h->dev.dp.qsbr, 0);
	w->now_ns = h->now;
	n = tl_worker_round(w);
	/* counted as tl_worker_main counts its rounds */
	if (n)
		w->cnt.busy_polls++;
	else
		w->cnt.idle_polls++;
	rte_rcu_qsbr_thread_offline(h->dev.dp.qsbr, 0);
	return n;
}

/* ---- worker 0 on a thread ---------------------------------------------------------------- */

struct tl_ch_worker_thread {
	struct tl_ch *h;
	pthread_t tid;
	const uint32_t *watch;
	size_t n_watch;
	uint64_t now;
	atomic_bool stop;
	_Atomic uint64_t wiped, rounds;
};

/* Whether a lookup of each watched index finds a keypair still whole (a wiped one has index 0). */
static void watch_round(struct tl_ch_worker_thread *t)
{
	struct rte_hash *index = tl_dp_index(&t->h->dev.dp);

	for (size_t i = 0; i < t->n_watch; i++) {
		void *data;

		if (rte_hash_lookup_data(index, &t->watch[i], &data) >= 0 &&
		    ((const struct tl_keypair *)data)->local_index != t->watch[i])
			atomic_fetch_add(&t->wiped, 1);
	}
}

static void *worker_thread(void *arg)
{
	struct tl_ch_worker_thread *t = arg;
	struct tl_dp *dp = &t->h->dev.dp;
	struct tl_worker *w = &t->h->dev.workers[0];
	const struct timespec ms = { .tv_nsec = 1000000 };

	rte_rcu_qsbr_thread_online(dp->qsbr, 0);
	while (!atomic_load(&t->stop)) {
		watch_round(t);
		w->now_ns = t->now;
		if (tl_worker_round(w))          /* ends with a quiescent state report */
			w->cnt.busy_polls++;
		else
			w->cnt.idle_polls++;
		atomic_fetch_add(&t->rounds, 1);
		nanosleep(&ms, NULL);            /* online: a grace period waits for the next round */
	}
	rte_rcu_qsbr_thread_offline(dp->qsbr, 0);
	return NULL;
}

int tl_ch_worker_start(struct tl_ch *h, const uint32_t *watch, size_t n)
{
	struct tl_ch_worker_thread *t = calloc(1, sizeof(*t));

	if (!t || h->worker_thread) {
		free(t);
		printf("worker thread: %s\n", t ? "already running" : "out of memory");
		return -1;
	}
	t->h = h;
	t->watch = watch;
	t->n_watch = n;
	t->now = h->now;
	atomic_init(&t->stop, false);
	if (pthread_create(&t->tid, NULL, worker_thread, t) != 0) {
		printf("worker thread: cannot start\n");
		free(t);
		return -1;
	}
	h->worker_thread = t;
	return 0;
}

uint64_t tl_ch_worker_stop(struct tl_ch *h)
{
	struct tl_ch_worker_thread *t = h->worker_thread;
	uint64_t wiped;

	if (!t)
		return 0;
	atomic_store(&t->stop, true);
	pthread_join(t->tid, NULL);
	wiped = atomic_load(&t->wiped);
	h->worker_thread = NULL;
	free(t);
	return wiped;
}

uint64_t tl_ch_worker_rounds(struct tl_ch *h)
{
	return h->worker_thread ? atomic_load(&h->worker_thread->rounds) : 0;
}

uint64_t tl_ch_grace_periods(struct tl_ch *h)
{
	return __atomic_load_n(&h->dev.dp.qsbr->token, __ATOMIC_ACQUIRE);
}

/* ---- the index table ------------------------------------------------------------------ */

static bool peer_live(struct tl_ch *h, const struct tl_peer_ctrl *pc)
{
	struct tl_peer_ctrl *p;

	TAILQ_FOREACH(p, &h->dev.peers, link)
		if (p == pc)
			return true;
	return false;
}

/* Calls f for every entry; sums what it returns. */
static unsigned index_walk(struct tl_ch *h, unsigned (*f)(struct tl_ch *, uint32_t, struct tl_index_ref *,
							   const void *), const void *arg)
{
	const void *key;
	void *data;
	uint32_t next = 0;
	unsigned n = 0;

	while (rte_hash_iterate(h->dev.ctrl_index, &key, &data, &next) >= 0)
		n += f(h, *(const uint32_t *)key, data, arg);
	return n;
}

static unsigned owned_by(struct tl_ch *h, uint32_t idx, struct tl_index_ref *ref, const void *pc)
{
	(void)h;
	(void)idx;
	return ref->pc == pc;
}

static unsigned orphan(struct tl_ch *h, uint32_t idx, struct tl_index_ref *ref, const void *arg)
{
	(void)idx;
	(void)arg;
	return !peer_live(h, ref->pc);
}

static unsigned stale(struct tl_ch *h, uint32_t idx, struct tl_index_ref *ref, const void *arg)
{
	(void)arg;
	if (!ref->is_handshake || !peer_live(h, ref->pc))
		return 0;
	return ref->pc->hs.state != TL_HS_CREATED_INITIATION || ref->pc->hs.local_index != idx;
}

unsigned tl_ch_index_refs(struct tl_ch *h, const struct tl_peer_ctrl *pc)
{
	return index_walk(h, owned_by, pc);
}

unsigned tl_ch_index_orphans(struct tl_ch *h)
{
	return index_walk(h, orphan, NULL);
}

unsigned tl_ch_index_stale(struct tl_ch *h)
{
	return index_walk(h, stale, NULL);
}
