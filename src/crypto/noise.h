/* Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake of WireGuard: message creation and
 * consumption, session derivation. Pure computation: the caller (control plane) supplies
 * time, indices and peer lookups, and is single-threaded with respect to one handshake (the
 * two-pass functions at the end split a message between threads). */
#ifndef TL_NOISE_H
#define TL_NOISE_H

#include <stdbool.h>
#include <stdint.h>
#include "crypto/messages.h"

/* Our static identity, with the keys derived from it. */
struct tl_identity {
	bool has_key;
	uint8_t priv[TL_KEY_LEN];
	uint8_t pub[TL_KEY_LEN];
	uint8_t mac1_key[TL_HASH_LEN];    /* HASH("mac1----" || pub): checks mac1 of messages to us */
	uint8_t cookie_key[TL_HASH_LEN];  /* HASH("cookie--" || pub): seals our cookie replies */
};

void tl_identity_set(struct tl_identity *id, const uint8_t priv[TL_KEY_LEN]);
void tl_identity_clear(struct tl_identity *id);

enum tl_hs_state {
	TL_HS_ZEROED,
	TL_HS_CREATED_INITIATION,   /* initiator: sent e, es, s, ss, {t} */
	TL_HS_CONSUMED_INITIATION,  /* responder: read e, es, s, ss, {t} */
	TL_HS_CREATED_RESPONSE,     /* responder: sent e, ee, se, psk, {} */
	TL_HS_CONSUMED_RESPONSE,    /* initiator: read e, ee, se, psk, {} */
};

/* Per-peer handshake state. */
struct tl_handshake {
	enum tl_hs_state state;
	uint8_t remote_static[TL_KEY_LEN];
	uint8_t precomputed_ss[TL_KEY_LEN];     /* DH(our static, their static); zero if invalid */
	uint8_t psk[TL_KEY_LEN];                /* zeros when none */
	uint8_t remote_mac1_key[TL_HASH_LEN];   /* HASH("mac1----" || remote_static) */
	uint8_t remote_cookie_key[TL_HASH_LEN]; /* HASH("cookie--" || remote_static) */
	uint8_t hash[TL_HASH_LEN];
	uint8_t chaining_key[TL_HASH_LEN];
	uint8_t ephemeral_priv[TL_KEY_LEN];
	uint8_t remote_ephemeral[TL_KEY_LEN];
	uint32_t local_index;                   /* as on the wire (LE word) */
	uint32_t remote_index;
	uint8_t latest_timestamp[TL_TIMESTAMP_LEN];   /* greatest accepted from this peer */
	uint64_t last_initiation_consumption_ns;      /* for the 20 ms flood limit */
	/* Cookie the peer gave us (for mac2 on our messages to it). */
	uint8_t cookie[TL_COOKIE_LEN];
	uint64_t cookie_birth_ns;                     /* 0 = none */
	uint8_t last_mac1_sent[TL_MAC_LEN];           /* AD for a cookie reply to us */
	bool have_sent_mac1;
};

enum tl_noise_err {
	TL_NOISE_OK = 0,
	TL_NOISE_EINVAL = -1,        /* wrong state or bad arguments */
	TL_NOISE_EUNKNOWN_PEER = -2, /* static key / receiver index not ours */
	TL_NOISE_EAUTH = -3,         /* AEAD or DH failure */
	TL_NOISE_EREPLAY = -4,       /* timestamp not greater than the latest */
	TL_NOISE_EFLOOD = -5,        /* initiation within 20 ms of the previous one */
};

/* Sets up a peer's handshake: static-static DH, psk (NULL = none), derived mac/cookie keys. */
void tl_handshake_init(struct tl_handshake *hs, const struct tl_identity *id,
		       const uint8_t remote_static[TL_KEY_LEN], const uint8_t *psk);
/* Forgets ephemeral and chaining state (keeps static/psk/timestamp/cookie). */
void tl_handshake_clear(struct tl_handshake *hs);

/* TAI64N timestamp of now (realtime clock), nanoseconds rounded down as WireGuard does. */
void tl_tai64n_now(uint8_t out[TL_TIMESTAMP_LEN]);

/* Initiator. Fills m completely including mac1 and, with a fresh cookie, mac2. */
int tl_noise_create_initiation(struct tl_msg_initiation *m, struct tl_handshake *hs,
			       const struct tl_identity *id, uint32_t local_index,
			       const uint8_t timestamp[TL_TIMESTAMP_LEN], uint64_t now_ns);

/* Responder. mac1/mac2 must already have been checked by the cookie checker. The lookup
 * maps a decrypted static key to that peer's handshake (NULL = unknown peer). On success
 * *out is the peer's handshake, now in TL_HS_CONSUMED_INITIATION. */
typedef struct tl_handshake *(*tl_static_lookup_fn)(void *arg, const uint8_t remote_static[TL_KEY_LEN]);
int tl_noise_consume_initiation(const struct tl_msg_initiation *m, const struct tl_identity *id,
				tl_static_lookup_fn lookup, void *arg, uint64_t now_ns,
				struct tl_handshake **out);

int tl_noise_create_response(struct tl_msg_response *m, struct tl_handshake *hs,
			     uint32_t local_index, uint64_t now_ns);

/* As the two above, with a caller-chosen (clamped) ephemeral private key instead of a
 * fresh random one: for known-answer tests only, never for real traffic. */
int tl_noise_create_initiation_with_ephemeral(struct tl_msg_initiation *m, struct tl_handshake *hs,
					      const struct tl_identity *id, uint32_t local_index,
					      const uint8_t timestamp[TL_TIMESTAMP_LEN],
					      const uint8_t ephemeral_priv[TL_KEY_LEN], uint64_t now_ns);
int tl_noise_create_response_with_ephemeral(struct tl_msg_response *m, struct tl_handshake *hs,
					    uint32_t local_index,
					    const uint8_t ephemeral_priv[TL_KEY_LEN], uint64_t now_ns);

/* Initiator. The lookup maps our index (m->receiver) to the handshake that sent it. */
typedef struct tl_handshake *(*tl_index_lookup_fn)(void *arg, uint32_t local_index);
int tl_noise_consume_response(const struct tl_msg_response *m, const struct tl_identity *id,
			      tl_index_lookup_fn lookup, void *arg, struct tl_handshake **out);

/* Transport keys of a completed handshake. */
struct tl_session_keys {
	uint8_t send[TL_KEY_LEN];
	uint8_t recv[TL_KEY_LEN];
	uint32_t local_index;
	uint32_t remote_index;
	bool initiator;
};

/* After TL_HS_CONSUMED_RESPONSE (initiator) or TL_HS_CREATED_RESPONSE (responder): derives
 * the keys, then zeroes the ephemeral/chaining state and returns hs to TL_HS_ZEROED. */
int tl_noise_derive_session(struct tl_handshake *hs, struct tl_session_keys *out);

/* ---- Answering in two passes ---------------------------------------------------------------
 * The control plane answers a batch of received messages on several threads. The first pass
 * (tl_noise_answer_*) does all of a message's X25519, hashing and AEAD: it reads our identity
 * and, through the lookup, the peer's keys and handshake, and writes only the job, so any
 * thread may run it while the peers do not change. The second pass (tl_noise_commit_*), on
 * the thread that owns the peers and in the order the messages came, checks what depends on
 * the peer's state as it is now (replay and flood; that the handshake a response answers is
 * still waiting), writes that state and completes the message (our index, the MACs). The
 * messages and keys are the same as those of the functions above. */
struct tl_noise_job {
	int status;                           /* of the first pass: TL_NOISE_OK or an error */
	struct tl_handshake *hs;              /* the peer's, as the first pass found it */
	uint8_t timestamp[TL_TIMESTAMP_LEN];  /* an initiation's */
	struct tl_msg_response resp;          /* our answer to an initiation, but sender and MACs */
	struct tl_session_keys keys;          /* the responder's local_index set by the commit */
};

/* Responder: consumes the initiation, builds the response, derives the session. */
void tl_noise_answer_initiation(struct tl_noise_job *j, const struct tl_msg_initiation *m,
				const struct tl_identity *id, tl_static_lookup_fn lookup, void *arg);
/* As above with a caller-chosen ephemeral: for known-answer tests only. */
void tl_noise_answer_initiation_with_ephemeral(struct tl_noise_job *j, const struct tl_msg_initiation *m,
					       const struct tl_identity *id, tl_static_lookup_fn lookup,
					       void *arg, const uint8_t ephemeral_priv[TL_KEY_LEN]);
/* Whether the commit would take it now: the first pass's error, TL_NOISE_EREPLAY, TL_NOISE_EFLOOD. */
int tl_noise_check_initiation(const struct tl_noise_job *j, uint64_t now_ns);
/* Takes it (the peer's handshake records its timestamp and ends in TL_HS_ZEROED with
 * local_index) and fills *out, the response to send. Nothing is written on an error. */
int tl_noise_commit_initiation(struct tl_noise_job *j, const struct tl_msg_initiation *m,
			       uint32_t local_index, uint64_t now_ns, struct tl_msg_response *out);

/* Initiator: consumes the response to our initiation and derives the session. */
void tl_noise_answer_response(struct tl_noise_job *j, const struct tl_msg_response *m,
			      const struct tl_identity *id, tl_index_lookup_fn lookup, void *arg);
/* The handshake it answers ends in TL_HS_ZEROED; TL_NOISE_EINVAL if that handshake is no
 * longer the one the first pass read (replaced or completed meanwhile). */
int tl_noise_commit_response(struct tl_noise_job *j, const struct tl_msg_response *m,
			     tl_index_lookup_fn lookup, void *arg);

void tl_noise_job_wipe(struct tl_noise_job *j);

#endif
