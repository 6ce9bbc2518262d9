/* Indices and keypairs. The control plane is the only writer of a peer's keypair slots
 * (current/previous/next) and of the index table; workers read them lock-free, and a
 * retired keypair is wiped and freed once no worker can still hold it: after the grace
 * period of its batch (dataplane/dp.h, tl_dp_index_retire), one for every keypair a request
 * or a tick retires. */
#include <stdlib.h>

#include <rte_malloc.h>

#include "ctrl/device.h"
#include "ctrl/session.h"
#include "ctrl/timers.h"

unsigned tl_index_grow_test_failures;

/* The control plane's index table replaced by one twice its size when three quarters full. */
static int ctrl_index_reserve(struct tl_device *dev)
{
	if (!tl_dp_hash_crowded(dev->ctrl_index, dev->ctrl_index_cap))
		return 0;
	if (tl_index_grow_test_failures) {
		tl_index_grow_test_failures--;
		return -1;
	}
	return tl_dp_hash_double(&dev->ctrl_index, &dev->ctrl_index_cap, "tl_cidx", &dev->dp.name_gen,
				 sizeof(uint32_t));
}

uint32_t tl_index_new(struct tl_device *dev, struct tl_peer_ctrl *pc, bool is_handshake)
{
	struct tl_index_ref *ref;
	uint32_t idx;

	ctrl_index_reserve(dev);       /* without room, the add below fails */
	ref = calloc(1, sizeof(*ref));
	if (!ref)
		return 0;
	ref->pc = pc;
	ref->is_handshake = is_handshake;
	do {
		idx = tl_random_u32();
	} while (idx == 0 || rte_hash_lookup(dev->ctrl_index, &idx) >= 0);
	if (rte_hash_add_key_data(dev->ctrl_index, &idx, ref) != 0) {
		free(ref);
		return 0;
	}
	pc->n_index++;
	return idx;
}

struct tl_index_ref *tl_index_find(struct tl_device *dev, uint32_t index)
{
	void *data;

	if (rte_hash_lookup_data(dev->ctrl_index, &index, &data) < 0)
		return NULL;
	return data;
}

void tl_index_free(struct tl_device *dev, uint32_t index)
{
	struct tl_index_ref *ref = tl_index_find(dev, index);

	if (!ref)
		return;
	rte_hash_del_key(dev->ctrl_index, &index);
	ref->pc->n_index--;
	free(ref);
}

/* The index of the peer's handshake in progress, if it is still a handshake's (a completed
 * handshake's index belongs to its keypair). */
void tl_index_drop_handshake(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_index_ref *ref = pc->hs.local_index ? tl_index_find(dev, pc->hs.local_index) : NULL;

	if (ref && ref->pc == pc && ref->is_handshake)
		tl_index_free(dev, pc->hs.local_index);
	pc->hs.local_index = 0;
}

/* Every index that still names pc, whatever holds it: nothing may lead to pc once it is
 * freed. Its sessions and handshake hold them all, so a scan of the table is a safety net
 * that does not run when they are gone already. */
void tl_index_drop_peer(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	uint32_t found[64], next = 0;
	unsigned n;
	const void *key;
	void *data;

	tl_index_drop_handshake(dev, pc);
	if (!pc->n_index)
		return;
	do {
		n = 0;
		next = 0;
		while (n < RTE_DIM(found) && rte_hash_iterate(dev->ctrl_index, &key, &data, &next) >= 0)
			if (((struct tl_index_ref *)data)->pc == pc)
				found[n++] = *(const uint32_t *)key;
		for (unsigned i = 0; i < n; i++)
			tl_index_free(dev, found[i]);
	} while (n == RTE_DIM(found));
	pc->hs.local_index = 0;
}

static struct tl_keypair *keypair_new(struct tl_device *dev, struct tl_peer_ctrl *pc,
				      const struct tl_session_keys *k, uint64_t now)
{
	struct tl_keypair *kp;

	if (tl_dp_index_grow(&dev->dp) != 0)
		return NULL;
	kp = rte_zmalloc("tl_keypair", sizeof(*kp), RTE_CACHE_LINE_SIZE);
	if (!kp)
		return NULL;
	memcpy(kp->send_key, k->send, TL_KEY_LEN);
	memcpy(kp->recv_key, k->recv, TL_KEY_LEN);
	kp->local_index = k->local_index;
	kp->remote_index = k->remote_index;
	kp->birth_ns = now;
	kp->initiator = k->initiator;
	kp->peer = pc->dp;
	atomic_init(&kp->send_counter, 0);
	rte_spinlock_init(&kp->replay_lock);
	tl_replay_init(&kp->replay);
	if (rte_hash_add_key_data(tl_dp_index(&dev->dp), &kp->local_index, kp) != 0) {
		tl_wipe(kp, sizeof(*kp));
		rte_free(kp);
		return NULL;
	}
	return kp;
}

void (*tl_keypair_reclaim_test_hook)(const struct tl_keypair *kp);
void (*tl_keypair_retire_test_hook)(uint32_t index);

/* Called after the keypair's grace period (tl_dp.index_reclaim). */
void tl_keypair_reclaim(void *arg, void *key_data)
{
	struct tl_keypair *kp = key_data;

	(void)arg;
	tl_wipe(kp, sizeof(*kp));
	if (tl_keypair_reclaim_test_hook)
		tl_keypair_reclaim_test_hook(kp);
	rte_free(kp);
}

/* The keypair is already out of the peer's slots: its index is unpublished, and it is wiped
 * and freed after the grace period of the batch it joins. key_gen is bumped after the index
 * left the table: a worker that sees the new generation can no longer find the keypair, so
 * the AEAD contexts drop their copies of its keys for good (ours now, each worker's at its
 * next round). */
static void keypair_retire(struct tl_device *dev, struct tl_keypair *kp)
{
	uint32_t index;

	if (!kp)
		return;
	index = kp->local_index;
	tl_index_free(dev, index);
	tl_dp_index_retire(&dev->dp, index, kp);
	if (tl_keypair_retire_test_hook)
		tl_keypair_retire_test_hook(index);
	atomic_fetch_add_explicit(&dev->dp.key_gen, 1, memory_order_release);
	tl_dp_aead_forget(dev->aead);
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (dev->workers[w].aead)
			tl_worker_kick(&dev->workers[w]);
}

static struct tl_keypair *slot_swap(_Atomic(struct tl_keypair *) *slot, struct tl_keypair *kp)
{
	return atomic_exchange_explicit(slot, kp, memory_order_acq_rel);
}

int tl_session_install(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_session_keys *k,
		       uint64_t now)
{
	struct tl_peer *p = pc->dp;
	struct tl_keypair *kp = keypair_new(dev, pc, k, now), *next;
	struct tl_index_ref *ref = tl_index_find(dev, k->local_index);

	if (!kp)
		return -1;
	if (ref)
		ref->is_handshake = false;
	if (k->initiator) {
		/* e, ee, se, psk consumed: usable at once. */
		next = slot_swap(&p->next, NULL);
		if (next) {
			keypair_retire(dev, slot_swap(&p->previous, next));
			keypair_retire(dev, slot_swap(&p->current, kp));
		} else {
			keypair_retire(dev, slot_swap(&p->previous, slot_swap(&p->current, kp)));
		}
	} else {
		/* Responder: wait for the first data message on it before sending with it. */
		keypair_retire(dev, slot_swap(&p->next, kp));
		keypair_retire(dev, slot_swap(&p->previous, NULL));
	}
	tl_timers_wake(dev, pc);
	pc->last_session_ns = now;
	pc->last_handshake_unix_ns = (uint64_t)time(NULL) * TL_NS;
	pc->handshakes++;
	return 0;
}

/* Data arrived on ->next: it becomes current. */
void tl_session_confirm(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_peer *p = pc->dp;
	struct tl_keypair *next = slot_swap(&p->next, NULL);

	if (!next)
		return;
	keypair_retire(dev, slot_swap(&p->previous, slot_swap(&p->current, next)));
	pc->hs_first_attempt_ns = 0;       /* the handshake completed as responder */
}

void tl_session_clear_all(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_peer *p = pc->dp;

	keypair_retire(dev, slot_swap(&p->next, NULL));
	keypair_retire(dev, slot_swap(&p->current, NULL));
	keypair_retire(dev, slot_swap(&p->previous, NULL));
}

static void expire_slot(struct tl_device *dev, _Atomic(struct tl_keypair *) *slot, uint64_t now)
{
	struct tl_keypair *kp = atomic_load(slot);

	if (kp && tl_age_ns(now, kp->birth_ns) >= dev->dp.limits.reject_after_time_ns)
		keypair_retire(dev, slot_swap(slot, NULL));
}

void tl_session_expire(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	expire_slot(dev, &pc->dp->next, now);
	expire_slot(dev, &pc->dp->current, now);
	expire_slot(dev, &pc->dp->previous, now);
}
