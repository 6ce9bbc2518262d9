/* The dataplane's shared objects: RCU state, the index and neighbour tables, the LAN route
 * snapshot, the rings to and from the control plane and the control-plane pools. Created
 * once by the control plane before the workers start, freed after they stop. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_errno.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "dataplane/bufsize.h"
#include "dataplane/dp.h"
#include "dataplane/flowrtt.h"
#include "dataplane/lanfib.h"
#include "dataplane/packet.h"
#include "dataplane/route.h"

#define TL_HS_RING_SIZE 4096
#define TL_NEIGH_REQ_SIZE 1024
#define TL_CTRL_POOL_SIZE 4095
#define TL_HS_POOL_SIZE (TL_HS_RING_SIZE + 1023)
#define TL_STAGE_POOL_SIZE 16383
#define TL_SMALL_BUF (RTE_PKTMBUF_HEADROOM + 256)   /* a whole handshake frame */
/* LAN next hops with a MAC: gateways and the LAN hosts the kernel knows (its neighbour
 * table holds about 1024 per family by default). */
#define TL_NEIGH_ENTRIES 16384
/* Sessions (keypairs) before the index table first grows; it doubles from there. */
#define TL_INDEX_MIN 4096
#define TL_PEER_MAP_MIN 1024
/* Retired entries an empty retirement queue keeps room for. */
#define TL_RETIRED_KEEP 4096

/* Neighbour entries carry their MAC in the data pointer: nothing to free after the grace
 * period but the key slot, which the hash library recycles itself. */
static void neigh_reclaim(void *arg, void *key_data)
{
	(void)arg;
	(void)key_data;
}

struct rte_hash *tl_dp_hash_new(const char *name, uint32_t entries, uint32_t key_len, bool lock_free)
{
	struct rte_hash_parameters p = {
		.name = name,
		.entries = entries,
		.key_len = key_len,
		.hash_func = rte_jhash,
		.socket_id = (int)rte_socket_id(),
		.extra_flag = lock_free ? RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF : 0,
	};

	return rte_hash_create(&p);
}

struct rte_hash *tl_dp_hash_copy(struct rte_hash *h, const char *name, uint32_t entries, uint32_t key_len,
				 bool lock_free)
{
	struct rte_hash *n = tl_dp_hash_new(name, entries, key_len, lock_free);
	const void *key;
	void *data;
	uint32_t next = 0;

	while (n && rte_hash_iterate(h, &key, &data, &next) >= 0)
		if (rte_hash_add_key_data(n, key, data) != 0) {
			rte_hash_free(n);
			n = NULL;
		}
	return n;
}

bool tl_dp_hash_crowded(struct rte_hash *h, uint32_t cap)
{
	return (uint64_t)(rte_hash_count(h) + 1) * 4 >= (uint64_t)cap * 3;
}

int tl_dp_hash_double(struct rte_hash **h, uint32_t *cap, const char *prefix, uint64_t *gen, uint32_t key_len)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash *n;

	snprintf(name, sizeof(name), "%s%" PRIu64, prefix, (*gen)++);
	n = tl_dp_hash_copy(*h, name, *cap * 2, key_len, false);
	if (!n)
		return -1;
	rte_hash_free(*h);
	*h = n;
	*cap *= 2;
	return 0;
}

/* Lock-free readers and no RCU configuration: a delete frees neither the entry's data nor its
 * key slot; tl_dp_index_retire queues both for the grace period of a whole batch. */
static struct rte_hash *index_new(struct tl_dp *dp, struct rte_hash *from, uint32_t entries)
{
	char name[RTE_HASH_NAMESIZE];

	snprintf(name, sizeof(name), "tl_index%" PRIu64, dp->name_gen++);
	return from ? tl_dp_hash_copy(from, name, entries, sizeof(uint32_t), true)
		    : tl_dp_hash_new(name, entries, sizeof(uint32_t), true);
}

/* The first n retired entries, whose grace period is over: their key slots back to the index
 * table (free_slots; not when the table they were in is being freed whole) and their data to
 * the reclaim function. */
static void retired_reclaim(struct tl_dp *dp, uint32_t n, bool free_slots)
{
	struct rte_hash *h = tl_dp_index(dp);

	for (uint32_t i = 0; i < n; i++) {
		if (free_slots && dp->retired[i].pos >= 0)
			rte_hash_free_key_with_position(h, dp->retired[i].pos);
		dp->index_reclaim(NULL, dp->retired[i].data);
	}
	dp->n_retired -= n;
	if (dp->n_retired)
		memmove(dp->retired, dp->retired + n, dp->n_retired * sizeof(dp->retired[0]));
	dp->n_sealed = 0;
	if (!dp->n_retired && dp->cap_retired > TL_RETIRED_KEEP) {
		free(dp->retired);     /* a mass retirement's array is not kept */
		dp->retired = NULL;
		dp->cap_retired = 0;
	}
}

void tl_dp_index_retire(struct tl_dp *dp, uint32_t index, void *data)
{
	int32_t pos = rte_hash_del_key(tl_dp_index(dp), &index);

	if (dp->n_retired == dp->cap_retired) {
		uint32_t cap = dp->cap_retired ? 2 * dp->cap_retired : 64;
		struct tl_dp_retired *r = realloc(dp->retired, cap * sizeof(*r));

		if (!r) {
			/* Nowhere to wait: the grace period is waited for now, for it and the rest. */
			rte_rcu_qsbr_synchronize(dp->qsbr, RTE_QSBR_THRID_INVALID);
			if (pos >= 0)
				rte_hash_free_key_with_position(tl_dp_index(dp), pos);
			dp->index_reclaim(NULL, data);
			if (dp->n_retired)
				retired_reclaim(dp, dp->n_retired, true);
			return;
		}
		dp->retired = r;
		dp->cap_retired = cap;
	}
	dp->retired[dp->n_retired++] = (struct tl_dp_retired){ .data = data, .pos = pos };
}

/* Whether every worker went through a quiescent state since the sealed batch's token. */
static bool sealed_done(struct tl_dp *dp)
{
	return dp->n_sealed && rte_rcu_qsbr_check(dp->qsbr, dp->retire_token, false) == 1;
}

bool tl_dp_retire_poll(struct tl_dp *dp)
{
	if (sealed_done(dp))
		retired_reclaim(dp, dp->n_sealed, true);
	if (!dp->n_sealed && dp->n_retired) {
		dp->retire_token = rte_rcu_qsbr_start(dp->qsbr);
		dp->n_sealed = dp->n_retired;
		if (sealed_done(dp))       /* every worker offline (idle): over already */
			retired_reclaim(dp, dp->n_sealed, true);
	}
	return dp->n_retired != 0;
}

void tl_dp_synchronize(struct tl_dp *dp)
{
	rte_rcu_qsbr_synchronize(dp->qsbr, RTE_QSBR_THRID_INVALID);
	if (dp->n_retired)
		retired_reclaim(dp, dp->n_retired, true);
}

/* The old table is freed whole (its entries live on in the new one); the grace period it
 * waits for reclaims what was retired before. */
int tl_dp_index_grow(struct tl_dp *dp)
{
	struct rte_hash *old = tl_dp_index(dp), *h;

	if (!tl_dp_hash_crowded(old, dp->index_cap))
		return 0;
	h = index_new(dp, old, dp->index_cap * 2);
	if (!h)
		return -1;
	atomic_store_explicit(&dp->index_table, h, memory_order_release);
	dp->index_cap *= 2;
	rte_rcu_qsbr_synchronize(dp->qsbr, RTE_QSBR_THRID_INVALID);
	if (dp->n_retired)         /* their key slots are the old table's */
		retired_reclaim(dp, dp->n_retired, false);
	rte_hash_free(old);
	return 0;
}

int tl_dp_peers_reserve(struct tl_dp *dp, uint32_t id)
{
	struct tl_peer_map *old = atomic_load(&dp->peers), *m;
	uint32_t cap = old->cap;

	if (id < cap)
		return 0;
	while (cap <= id)
		cap *= 2;
	m = rte_zmalloc("tl_peer_map", sizeof(*m) + cap * sizeof(m->slot[0]), RTE_CACHE_LINE_SIZE);
	if (!m)
		return -1;
	m->cap = cap;
	for (uint32_t i = 0; i < old->cap; i++)
		atomic_init(&m->slot[i], atomic_load(&old->slot[i]));
	atomic_store_explicit(&dp->peers, m, memory_order_release);
	tl_dp_synchronize(dp);
	rte_free(old);
	return 0;
}

int tl_dp_create(struct tl_dp *dp, rte_hash_free_key_data reclaim)
{
	size_t qsz = rte_rcu_qsbr_get_memsize(dp->n_workers);
	int socket = (int)rte_socket_id();
	struct rte_hash_rcu_config rcu = { .mode = RTE_HASH_QSBR_MODE_SYNC };
	struct tl_peer_map *map;

	dp->qsbr = rte_zmalloc("tl_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	if (!dp->qsbr || rte_rcu_qsbr_init(dp->qsbr, dp->n_workers) != 0)
		return -1;
	map = rte_zmalloc("tl_peer_map", sizeof(*map) + TL_PEER_MAP_MIN * sizeof(map->slot[0]), RTE_CACHE_LINE_SIZE);
	if (!map)
		return -1;
	map->cap = TL_PEER_MAP_MIN;
	atomic_store(&dp->peers, map);
	dp->index_reclaim = reclaim;
	dp->index_cap = TL_INDEX_MIN;
	atomic_store(&dp->index_table, index_new(dp, NULL, dp->index_cap));
	dp->neigh_table = tl_dp_hash_new("tl_neigh", TL_NEIGH_ENTRIES, sizeof(struct tl_neigh_key), true);
	if (!dp->index_table || !dp->neigh_table)
		return -1;
	rcu.v = dp->qsbr;
	rcu.free_key_data_func = neigh_reclaim;
	if (rte_hash_rcu_qsbr_add(dp->neigh_table, &rcu) != 0)
		return -1;
	dp->hs_ring = rte_ring_create("tl_hs", TL_HS_RING_SIZE, socket, RING_F_SC_DEQ);
	dp->neigh_req = rte_ring_create_elem("tl_neigh_req", sizeof(struct tl_neigh_key), TL_NEIGH_REQ_SIZE,
					     socket, RING_F_SC_DEQ);
	/* Buffers for frames of the MTU: staged packets, reassembled datagrams of the slow path. */
	dp->ctrl_pool = rte_pktmbuf_pool_create("tl_ctrl", TL_CTRL_POOL_SIZE, 64, 0, tl_buf_data_room(dp->mtu, 0),
						socket);
	dp->hs_pool = rte_pktmbuf_pool_create("tl_hs", TL_HS_POOL_SIZE, 64, TL_HS_PRIV, TL_SMALL_BUF, socket);
	dp->stage_pool = rte_pktmbuf_pool_create("tl_stage", TL_STAGE_POOL_SIZE, 64, 0, tl_buf_data_room(dp->mtu, 0),
						 socket);
	/* Room for every job of every possible queue owner: submitting never fails. */
	dp->crypto_ring = rte_ring_create("tl_crypto", dp->n_workers * TL_DIR_MAX * TL_JOBS_PER_OWNER, socket,
					  RING_F_EXACT_SZ);
	dp->stage_ring = rte_ring_create_elem("tl_stage", sizeof(struct tl_staged), TL_STAGE_POOL_SIZE + 1, socket,
					      RING_F_SC_DEQ);
	dp->flowrtt = tl_flowrtt_create("tl_flowrtt", socket);
	return dp->flowrtt && dp->hs_pool && dp->stage_pool && dp->hs_ring && dp->neigh_req && dp->ctrl_pool && dp->crypto_ring &&
		       dp->stage_ring ? 0 : -1;
}

unsigned tl_dp_pool_bufs(void)
{
	return TL_CTRL_POOL_SIZE + TL_STAGE_POOL_SIZE;
}

/* Retired keypairs still waiting are reclaimed (no worker runs any more); the ones still in
 * the table belong to the caller. Handshake copies still in the ring are freed. */
void tl_dp_free(struct tl_dp *dp)
{
	struct tl_table *t = atomic_exchange(&dp->table, NULL);
	struct tl_staged s;
	struct rte_mbuf *m;

	if (dp->n_retired)
		retired_reclaim(dp, dp->n_retired, false);   /* the table goes whole */
	free(dp->retired);
	dp->retired = NULL;
	dp->cap_retired = 0;
	tl_table_free(t);
	tl_lanfib_free(atomic_exchange(&dp->lanfib, NULL));
	while (dp->hs_ring && rte_ring_dequeue(dp->hs_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (dp->stage_ring && rte_ring_dequeue_elem(dp->stage_ring, &s, sizeof(s)) == 0)
		rte_pktmbuf_free(s.m);
	rte_hash_free(atomic_exchange(&dp->index_table, NULL));
	rte_free(atomic_exchange(&dp->peers, NULL));
	rte_hash_free(dp->neigh_table);
	rte_ring_free(dp->hs_ring);
	tl_flowrtt_free(dp->flowrtt);
	dp->flowrtt = NULL;
	rte_ring_free(dp->stage_ring);
	rte_ring_free(dp->neigh_req);
	rte_ring_free(dp->crypto_ring);   /* the jobs belong to their owners */
	rte_mempool_free(dp->ctrl_pool);
	rte_mempool_free(dp->hs_pool);
	rte_mempool_free(dp->stage_pool);
	rte_free(dp->qsbr);
	dp->neigh_table = NULL;
	dp->hs_ring = dp->neigh_req = dp->crypto_ring = dp->stage_ring = NULL;
	dp->ctrl_pool = dp->hs_pool = dp->stage_pool = NULL;
	dp->qsbr = NULL;
}
