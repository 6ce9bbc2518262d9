/* Crypto jobs (crypt.c): sealing and opening spread over every worker, results in order.
 *
 * A queue owner (a worker that owns a port queue pair) puts the packets of one burst and
 * one direction into a job, with copies of the keys they need, and submits it: the job
 * joins the owner's FIFO of jobs in flight (jobs_order) and the shared ring of jobs
 * waiting for a worker (dp->crypto_ring). Any worker, the owner included, takes waiting
 * jobs and seals or opens their packets with its own AEAD context. The owner finishes its
 * jobs strictly in submission order, from the head of its FIFO, once each is done: so a
 * peer's packets leave in the order they arrived, whichever worker did their crypto. The
 * jobs know no direction's finish: encap.c and decap.c take their done heads
 * (tl_crypt_done_head), finish them and give them back (tl_crypt_release).
 *
 *   owner:  classify/prepare -> job -> jobs_order (SP/SC)  ...  head done? -> finish, in order
 *                                  \-> crypto_ring (MP/MC) -> any worker: seal/open -> done
 *
 * Nothing of RCU-protected memory (peers, keypairs) crosses rounds inside a job: the keys
 * are copied in (and wiped when the job is finished) and decapsulation looks its keypair
 * up again when it finishes. Every queue is bounded: an owner has at most
 * tl_crypt_inflight_max() jobs in flight per direction (enough to keep every worker busy, few
 * enough that packets do not wait long outside the AQM's sight); without a free one it stops
 * reading its RX queue (decapsulation) or dequeuing its egress queue (encapsulation), so
 * that pressure reaches the port's ring or the AQM. The shared ring holds every job there
 * is, so submitting never fails. */
#ifndef TL_CRYPT_H
#define TL_CRYPT_H

#include "dataplane/lcore.h"
#include "dataplane/packet.h"

/* One packet of a job. */
struct tl_crypt_pkt {
	uint64_t counter;                 /* the nonce */
	uint16_t off;                     /* sealed/opened bytes start this far into the data */
	uint16_t len;                     /* their length, without the tag that follows */
	uint8_t key;                      /* slot in job->keys */
	bool v6_csum;                     /* encapsulation: fill the outer UDP checksum after */
	bool ok;                          /* the worker's result */
	bool moved;                       /* decapsulation: from another source than the endpoint
					   * when classified (counted in owner->roams_inflight) */
	bool outer_ok;                    /* decapsulation: outer headers intact, may set the endpoint */
	const struct tl_keypair *kp;      /* decapsulation: compared, never dereferenced, on finish */
	uint64_t kp_birth;
	struct tl_outer o;                /* decapsulation: outer source, for roaming and ECN */
};

struct tl_crypt_job {
	_Atomic bool done;                /* released by the worker that ran it */
	uint8_t dir;                      /* enum tl_dir */
	uint16_t n;                       /* packets */
	uint16_t next;                    /* owner: packets finished so far */
	bool checked;                     /* owner: failed seals taken out */
	uint16_t n_keys;
	uint64_t key_gen;                 /* dp->key_gen when the job was opened */
	struct tl_worker *owner;
	struct rte_mbuf *m[TL_JOB_MAX];
	struct tl_crypt_pkt p[TL_JOB_MAX];
	const void *key_src[TL_JOB_MAX];  /* the keypair a key slot was copied from (compared only) */
	uint8_t keys[TL_JOB_MAX][TL_KEY_LEN];
};

/* Jobs and FIFOs of a queue owner (w->owner set). 0 or -1. fini frees the packets of
 * jobs not finished (the workers have stopped) and wipes every key copy. */
int tl_crypt_owner_init(struct tl_worker *w);
void tl_crypt_owner_fini(struct tl_worker *w);

/* Jobs one owner may have in flight per direction: two per worker and two more, at most
 * TL_JOBS_PER_OWNER. */
static inline unsigned tl_crypt_inflight_max(const struct tl_dp *dp)
{
	return RTE_MIN(2 * dp->n_workers + 2, (unsigned)TL_JOBS_PER_OWNER);
}

/* The job of direction dir being filled, taking a free one if needed; NULL when every
 * job is in flight (counted in crypto_full: the caller stops reading). */
struct tl_crypt_job *tl_crypt_open(struct tl_worker *w, int dir);

/* Adds packet m of job j with key (from keypair src), counter and the bytes to seal or
 * open (off, len). Returns the packet's slot for the caller's extra fields. The job must
 * have room (j->n < TL_JOB_MAX). */
struct tl_crypt_pkt *tl_crypt_add(struct tl_crypt_job *j, struct rte_mbuf *m, const void *src,
			    const uint8_t key[TL_KEY_LEN], uint64_t counter, uint16_t off, uint16_t len);

/* Submits the job being filled in direction dir, if it holds packets: true when it did.
 * With one worker the job is run at once (done); the caller then finishes what is done
 * (with several, earlier jobs other workers have done meanwhile). */
bool tl_crypt_submit(struct tl_worker *w, int dir);

/* Takes jobs waiting in the shared ring and runs them, at most max. Returns the packets
 * sealed or opened. Any worker. */
unsigned tl_crypt_work(struct tl_worker *w, unsigned max);

/* The owner's oldest job of direction dir in flight if it is done, else NULL: the next
 * one to finish, in submission order. It stays in flight until tl_crypt_release. */
struct tl_crypt_job *tl_crypt_done_head(struct tl_worker *w, int dir);

/* Gives back the done head j once all of it is finished: its key copies wiped, free for
 * tl_crypt_open. */
void tl_crypt_release(struct tl_worker *w, struct tl_crypt_job *j);

/* Jobs of this owner in flight, either direction. */
bool tl_crypt_busy(const struct tl_worker *w);

#endif
