/* WireGuard's timers, derived on the control plane from the event stamps the workers
 * leave on each peer (data sent/received, authenticated packet received) instead of
 * per-packet timer updates on the fast path. Run on every tick of the control loop (every
 * 5 ms while the stamps move, every 100 ms otherwise: loop.h), over the peers that have
 * something going on (the active list), never over every peer: a hub's idle road warriors
 * cost nothing. */
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/neigh.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "ctrl/timers.h"

/* Active peers ticked per run at most: with more, each is ticked every few runs. */
#define TL_TICK_BUDGET 2048
/* Peers looked at per run by the sweep (every peer within about 100 runs): a peer that has
 * something going on but was not woken (a staged copy that found no buffer) is found. */
#define TL_SWEEP_MIN 256

static uint64_t secs(double s)
{
	return (uint64_t)(s * 1e9);
}

static uint64_t stamp(_Atomic uint64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

/* Retransmit an initiation after REKEY_TIMEOUT (+ jitter); give up after REKEY_ATTEMPT_TIME
 * and drop what was waiting for the session. */
static void handshake_retry(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	const struct tl_cfg_timers *t = &dev->cfg->timers;

	if (!pc->hs_first_attempt_ns)
		return;
	if (now - pc->hs_first_attempt_ns >= secs(t->rekey_attempt_time)) {
		tl_log_info("peer %u: handshake did not complete after %.0f s, giving up", pc->dp->id,
			    t->rekey_attempt_time);
		pc->hs_first_attempt_ns = 0;
		tl_index_drop_handshake(dev, pc);
		tl_handshake_clear(&pc->hs);
		tl_staged_drop(dev, pc, TL_DROP_no_session_expired);
		atomic_store(&pc->dp->want_handshake, false);
		return;
	}
	if (now - pc->hs_last_sent_ns >= pc->hs_retry_ns)
		tl_handshake_initiate(dev, pc, now);
}

/* Arming from two event stamps, as the previous tick saw them (*seen_*) and now: an
 * arming event (data) arms the timer at its stamp unless it is already armed; an answering
 * event disarms it. When both happened since the previous tick, the later stamp decides
 * (a tie counts as answered: a worker stamps what it receives and what it sends in one
 * burst with the same clock). The first unanswered event lies within the tick before its
 * stamp was seen, so the timer is armed no more than a tick late. */
static void arm_update(uint64_t *armed, uint64_t *seen_arm, uint64_t arm, uint64_t *seen_ans, uint64_t ans)
{
	bool new_arm = arm != *seen_arm, new_ans = ans != *seen_ans;

	*seen_arm = arm;
	*seen_ans = ans;
	if (new_ans && (!new_arm || ans >= arm))
		*armed = 0;
	else if (new_arm && (!*armed || new_ans))
		*armed = arm;
}

/* Data sent and nothing authenticated received since the first of it, for KEEPALIVE +
 * REKEY_TIMEOUT: new handshake (once; more data sent arms it again). */
static void new_handshake_check(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	const struct tl_cfg_timers *t = &dev->cfg->timers;

	arm_update(&pc->new_hs_armed_ns, &pc->seen_tx_data_ns, stamp(&pc->dp->last_tx_data_ns),
		   &pc->seen_rx_auth_ns, stamp(&pc->dp->last_rx_auth_ns));
	if (!pc->new_hs_armed_ns ||
	    tl_age_ns(now, pc->new_hs_armed_ns) < secs(t->keepalive_timeout + t->rekey_timeout))
		return;
	pc->new_hs_armed_ns = 0;
	if (!pc->hs_first_attempt_ns)
		tl_handshake_initiate(dev, pc, now);
}

/* Data received and nothing sent since the first of it, for KEEPALIVE_TIMEOUT: keepalive,
 * and again KEEPALIVE_TIMEOUT later if more data arrived meanwhile. */
static void keepalive_check(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	const struct tl_cfg_timers *t = &dev->cfg->timers;
	uint64_t armed;

	arm_update(&pc->keepalive_armed_ns, &pc->seen_rx_data_ns, stamp(&pc->dp->last_rx_data_ns),
		   &pc->seen_tx_any_ns, stamp(&pc->dp->last_tx_any_ns));
	armed = pc->keepalive_armed_ns;
	if (!armed || tl_age_ns(now, armed) < secs(t->keepalive_timeout))
		return;
	tl_send_keepalive(dev, pc, now);
	/* The keepalive (or the initiation sent instead) is ours: it does not disarm. */
	pc->seen_tx_any_ns = stamp(&pc->dp->last_tx_any_ns);
	pc->keepalive_armed_ns = pc->seen_rx_data_ns > armed ? now : 0;
}

static void persistent_keepalive_check(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	uint64_t interval = (uint64_t)pc->cfg.persistent_keepalive * TL_NS;
	uint64_t tx = stamp(&pc->dp->last_tx_any_ns);

	/* A worker's stamp may be later than the tick's clock: its age is then 0. */
	if (interval && tl_peer_has_endpoint(pc->dp) && tl_age_ns(now, tx) >= interval &&
	    tl_age_ns(now, pc->last_keepalive_sent_ns) >= interval)
		tl_send_keepalive(dev, pc, now);
}

/* The initiator rekeys before its session is rejected even when it only receives. */
static void receive_rekey_check(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	const struct tl_cfg_timers *t = &dev->cfg->timers;
	struct tl_keypair *kp = atomic_load(&pc->dp->current);
	uint64_t rx = stamp(&pc->dp->last_rx_data_ns);

	if (kp && kp->initiator && !pc->hs_first_attempt_ns && rx > kp->birth_ns &&
	    tl_age_ns(now, kp->birth_ns) >= secs(t->reject_after_time - t->keepalive_timeout - t->rekey_timeout))
		tl_handshake_initiate(dev, pc, now);
}

/* Nothing new for 3 × REJECT_AFTER_TIME: forget every key of the peer. */
static void zero_keys_check(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	if (!pc->last_session_ns || now - pc->last_session_ns < 3 * secs(dev->cfg->timers.reject_after_time))
		return;
	tl_log_info("peer %u: no session for 3 x REJECT_AFTER_TIME, zeroing keys", pc->dp->id);
	tl_session_clear_all(dev, pc);
	tl_index_drop_handshake(dev, pc);
	tl_handshake_clear(&pc->hs);
	pc->last_session_ns = 0;
}

/* A worker asks for a handshake when the peer has no usable session or its session is due
 * for a rekey: a wish left from before the handshake that just completed is stale. A wish
 * waits out the rate limit (a response just sent: the initiator's first data is on its
 * way); one made while a handshake is under way is served by that handshake. */
static bool handshake_due(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_keypair *kp = atomic_load(&pc->dp->current);

	return !tl_keypair_can_send(&dev->dp, kp, now) ||
	       (kp->initiator && tl_age_ns(now, kp->birth_ns) >= dev->dp.limits.rekey_after_time_ns) ||
	       atomic_load(&kp->send_counter) >= dev->dp.limits.rekey_after_messages;
}

static void wanted_handshake(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	if (!pc->hs_first_attempt_ns && handshake_due(dev, pc, now)) {
		if (tl_handshake_recent(dev, pc, now))
			return;
		atomic_store(&pc->dp->want_handshake, false);
		tl_handshake_initiate(dev, pc, now);
		return;
	}
	atomic_store(&pc->dp->want_handshake, false);
}

/* Nothing for the timers to do now or later without an event that wakes the peer. */
static bool peer_idle(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_peer *p = pc->dp;

	(void)dev;
	return !atomic_load(&p->current) && !atomic_load(&p->previous) && !atomic_load(&p->next) &&
	       !pc->hs_first_attempt_ns && !pc->last_session_ns && !pc->keepalive_armed_ns && !pc->new_hs_armed_ns &&
	       !atomic_load(&p->want_handshake) && !atomic_load(&p->next_confirmed) &&
	       !atomic_load_explicit(&p->n_staged, memory_order_relaxed) &&
	       (!pc->cfg.persistent_keepalive || !tl_peer_has_endpoint(p)) && !tl_neigh_endpoint_resolving(pc);
}

void tl_timers_wake(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	if (pc->active)
		return;
	pc->active = true;
	TAILQ_INSERT_TAIL(&dev->active, pc, active_link);
	dev->n_active++;
}

void tl_timers_forget(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	if (!pc->active)
		return;
	pc->active = false;
	TAILQ_REMOVE(&dev->active, pc, active_link);
	dev->n_active--;
}

static void peer_tick(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	tl_neigh_resolve_endpoint(dev, pc, now);
	if (atomic_exchange(&pc->dp->next_confirmed, false)) {
		tl_session_confirm(dev, pc);
		/* Packets staged before this tick saw the confirmation (a responder's first
		 * replies): the fresh session carries them, no new handshake is due. */
		if (tl_keypair_can_send(&dev->dp, atomic_load(&pc->dp->current), now))
			atomic_store(&pc->dp->want_handshake, false);
	}
	tl_session_expire(dev, pc, now);
	if (atomic_load(&pc->dp->want_handshake))
		wanted_handshake(dev, pc, now);
	handshake_retry(dev, pc, now);
	new_handshake_check(dev, pc, now);
	keepalive_check(dev, pc, now);
	persistent_keepalive_check(dev, pc, now);
	receive_rekey_check(dev, pc, now);
	zero_keys_check(dev, pc, now);
	if (atomic_load_explicit(&pc->dp->n_staged, memory_order_relaxed))
		tl_staged_flush(dev, pc, now, 0);
}

/* A slice of every peer by id: the ones that are not idle join the active list. */
static void sweep(struct tl_device *dev)
{
	uint32_t n = RTE_MAX((uint32_t)TL_SWEEP_MIN, dev->next_id / 100);

	for (uint32_t k = 0; k < n && k < dev->next_id; k++) {
		struct tl_peer *p;

		if (dev->sweep_id >= dev->next_id)
			dev->sweep_id = 0;
		p = tl_dp_peer(&dev->dp, dev->sweep_id++);
		if (p && !((struct tl_peer_ctrl *)p->ctrl)->active && !peer_idle(dev, p->ctrl))
			tl_timers_wake(dev, p->ctrl);
	}
}

bool tl_timers_run(struct tl_device *dev, uint64_t now)
{
	bool moved = false;
	uint32_t n;

	sweep(dev);
	/* Round robin over the peers active now: each ticked peer goes to the back, behind any
	 * woken meanwhile, or leaves when it is idle. */
	n = RTE_MIN(dev->n_active, (uint32_t)TL_TICK_BUDGET);
	for (uint32_t k = 0; k < n; k++) {
		struct tl_peer_ctrl *pc = TAILQ_FIRST(&dev->active);
		uint64_t seen[] = { pc->seen_rx_data_ns, pc->seen_tx_any_ns, pc->seen_tx_data_ns, pc->seen_rx_auth_ns };

		tl_timers_forget(dev, pc);
		peer_tick(dev, pc, now);
		moved |= seen[0] != pc->seen_rx_data_ns || seen[1] != pc->seen_tx_any_ns ||
			 seen[2] != pc->seen_tx_data_ns || seen[3] != pc->seen_rx_auth_ns;
		if (!pc->active && !peer_idle(dev, pc))
			tl_timers_wake(dev, pc);
	}
	/* The keypairs this tick retired (expired, pushed out, zeroed): one grace period for all. */
	tl_dp_retire_poll(&dev->dp);
	return moved || dev->n_active > TL_TICK_BUDGET;
}
