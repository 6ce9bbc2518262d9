/* WireGuard's Noise_IKpsk2 handshake (whitepaper §5.4.2–§5.4.6). Every message is built
 * or read on local copies of the chaining key and hash; the peer's handshake is written
 * only once the whole message succeeded. Every temporary secret is wiped on every path. */
#include "crypto/noise.h"

#include <endian.h>
#include <string.h>
#include <time.h>

#include "crypto/cookie.h"

static const char tl_noise_construction[] = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
static const char tl_noise_identifier[] = "WireGuard v1 zx2c4 Jason@zx2c4.com";
static const char tl_label_mac1[] = "mac1----";
static const char tl_label_cookie[] = "cookie--";

#define TL_INITIATIONS_MIN_INTERVAL_NS (1000000000ull / 50)   /* 20 ms */
#define TL_TAI64_BASE 0x400000000000000aull                   /* 2^62 + TAI-UTC 10 s */
#define TL_TAI64N_NS_GRAIN (1u << 24)                          /* 2^24 ns, under 20 ms */

/* Transient state of one message being built or read. */
struct tl_noise_tmp {
	uint8_t ck[TL_HASH_LEN];
	uint8_t h[TL_HASH_LEN];
	uint8_t key[TL_KEY_LEN];
	uint8_t dh[TL_KEY_LEN];
	uint8_t tau[TL_HASH_LEN];
	uint8_t e_priv[TL_KEY_LEN];
	uint8_t remote_static[TL_KEY_LEN];
	uint8_t timestamp[TL_TIMESTAMP_LEN];
};

static void tl_noise_tmp_wipe(struct tl_noise_tmp *t)
{
	tl_wipe(t, sizeof(*t));
}

static uint32_t tl_msg_type_word(enum tl_msg_type type)
{
	return htole32((uint32_t)type);
}

/* ---- identity and per-peer setup ---------------------------------------------------- */

static void tl_derive_label_key(uint8_t out[TL_HASH_LEN], const char *label,
				const uint8_t pub[TL_KEY_LEN])
{
	tl_hash(out, label, 8, pub, TL_KEY_LEN, NULL, 0);
}

void tl_identity_set(struct tl_identity *id, const uint8_t priv[TL_KEY_LEN])
{
	memcpy(id->priv, priv, TL_KEY_LEN);
	tl_x25519_public(id->pub, id->priv);
	tl_derive_label_key(id->mac1_key, tl_label_mac1, id->pub);
	tl_derive_label_key(id->cookie_key, tl_label_cookie, id->pub);
	id->has_key = !tl_is_zero(id->pub, TL_KEY_LEN);
}

void tl_identity_clear(struct tl_identity *id)
{
	tl_wipe(id, sizeof(*id));
}

void tl_handshake_init(struct tl_handshake *hs, const struct tl_identity *id,
		       const uint8_t remote_static[TL_KEY_LEN], const uint8_t *psk)
{
	tl_wipe(hs, sizeof(*hs));
	memcpy(hs->remote_static, remote_static, TL_KEY_LEN);
	if (psk)
		memcpy(hs->psk, psk, TL_KEY_LEN);
	if (id->has_key)
		(void)tl_dh(hs->precomputed_ss, id->priv, remote_static);   /* zero when invalid */
	tl_derive_label_key(hs->remote_mac1_key, tl_label_mac1, remote_static);
	tl_derive_label_key(hs->remote_cookie_key, tl_label_cookie, remote_static);
}

void tl_handshake_clear(struct tl_handshake *hs)
{
	tl_wipe(hs->ephemeral_priv, sizeof(hs->ephemeral_priv));
	tl_wipe(hs->remote_ephemeral, sizeof(hs->remote_ephemeral));
	tl_wipe(hs->hash, sizeof(hs->hash));
	tl_wipe(hs->chaining_key, sizeof(hs->chaining_key));
	hs->remote_index = 0;
	hs->state = TL_HS_ZEROED;
}

void tl_tai64n_now(uint8_t out[TL_TIMESTAMP_LEN])
{
	struct timespec ts;
	uint64_t sec;
	uint32_t nsec;

	clock_gettime(CLOCK_REALTIME, &ts);
	sec = htobe64(TL_TAI64_BASE + (uint64_t)ts.tv_sec);
	/* Coarsen so that the timestamp reveals nothing finer than the flood limit. */
	nsec = htobe32((uint32_t)ts.tv_nsec & ~(TL_TAI64N_NS_GRAIN - 1));
	memcpy(out, &sec, sizeof(sec));
	memcpy(out + sizeof(sec), &nsec, sizeof(nsec));
}

/* ---- symmetric state operations -------------------------------------------------------- */

/* ck = HASH(CONSTRUCTION); h = HASH(HASH(ck || IDENTIFIER) || responder static) */
static void tl_noise_start(struct tl_noise_tmp *t, const uint8_t responder_static[TL_KEY_LEN])
{
	tl_hash(t->ck, tl_noise_construction, strlen(tl_noise_construction), NULL, 0, NULL, 0);
	tl_hash(t->h, t->ck, TL_HASH_LEN, tl_noise_identifier, strlen(tl_noise_identifier), NULL, 0);
	tl_hash(t->h, t->h, TL_HASH_LEN, responder_static, TL_KEY_LEN, NULL, 0);
}

static void tl_mix_hash(struct tl_noise_tmp *t, const void *in, size_t len)
{
	tl_hash(t->h, t->h, TL_HASH_LEN, in, len, NULL, 0);
}

/* e token (either side): ck = KDF1(ck, e); h = HASH(h || e) */
static void tl_mix_ephemeral(struct tl_noise_tmp *t, const uint8_t e_pub[TL_KEY_LEN])
{
	tl_kdf(t->ck, NULL, NULL, t->ck, e_pub, TL_KEY_LEN);
	tl_mix_hash(t, e_pub, TL_KEY_LEN);
}

/* (ck, key) = KDF2(ck, DH(priv, pub)); fails on a low-order point. */
static int tl_mix_dh_key(struct tl_noise_tmp *t, const uint8_t priv[TL_KEY_LEN],
			 const uint8_t pub[TL_KEY_LEN])
{
	if (tl_dh(t->dh, priv, pub))
		return -1;
	tl_kdf(t->ck, t->key, NULL, t->ck, t->dh, TL_KEY_LEN);
	return 0;
}

/* ck = KDF1(ck, DH(priv, pub)) */
static int tl_mix_dh(struct tl_noise_tmp *t, const uint8_t priv[TL_KEY_LEN],
		     const uint8_t pub[TL_KEY_LEN])
{
	if (tl_dh(t->dh, priv, pub))
		return -1;
	tl_kdf(t->ck, NULL, NULL, t->ck, t->dh, TL_KEY_LEN);
	return 0;
}

/* (ck, key) = KDF2(ck, precomputed DH(s, S)) */
static int tl_mix_precomputed(struct tl_noise_tmp *t, const uint8_t ss[TL_KEY_LEN])
{
	if (tl_is_zero(ss, TL_KEY_LEN))
		return -1;
	tl_kdf(t->ck, t->key, NULL, t->ck, ss, TL_KEY_LEN);
	return 0;
}

/* psk token: (ck, tau, key) = KDF3(ck, psk); h = HASH(h || tau) */
static void tl_mix_psk(struct tl_noise_tmp *t, const uint8_t psk[TL_KEY_LEN])
{
	tl_kdf(t->ck, t->tau, t->key, t->ck, psk, TL_KEY_LEN);
	tl_mix_hash(t, t->tau, TL_HASH_LEN);
}

/* out = AEAD(key, 0, in, h); h = HASH(h || out) */
static void tl_encrypt_and_hash(struct tl_noise_tmp *t, uint8_t *out, const uint8_t *in, size_t len)
{
	tl_aead_seal(out, in, len, 0, t->h, TL_HASH_LEN, t->key);
	tl_mix_hash(t, out, len + TL_AEAD_TAG_LEN);
}

static int tl_decrypt_and_hash(struct tl_noise_tmp *t, uint8_t *out, const uint8_t *in, size_t len)
{
	if (tl_aead_open(out, in, len + TL_AEAD_TAG_LEN, 0, t->h, TL_HASH_LEN, t->key))
		return -1;
	tl_mix_hash(t, in, len + TL_AEAD_TAG_LEN);
	return 0;
}

static void tl_hs_commit(struct tl_handshake *hs, const struct tl_noise_tmp *t,
			 enum tl_hs_state state)
{
	memcpy(hs->chaining_key, t->ck, TL_HASH_LEN);
	memcpy(hs->hash, t->h, TL_HASH_LEN);
	hs->state = state;
}

/* The end of a message we create: complete (ok), the handshake takes the new state, our
 * ephemeral and index and the message its MACs; else the message is zeroed. The temporary
 * state is wiped either way. */
static int tl_hs_created(struct tl_handshake *hs, struct tl_noise_tmp *t, bool ok, enum tl_hs_state state,
			 uint32_t local_index, void *m, size_t len, uint64_t now_ns)
{
	if (ok) {
		memcpy(hs->ephemeral_priv, t->e_priv, TL_KEY_LEN);
		hs->local_index = local_index;
		tl_hs_commit(hs, t, state);
		tl_cookie_add_macs(m, len, hs, now_ns);
	} else {
		memset(m, 0, len);
	}
	tl_noise_tmp_wipe(t);
	return ok ? TL_NOISE_OK : TL_NOISE_EAUTH;
}

/* ---- initiation: e, es, s, ss, {t} ------------------------------------------------------ */

int tl_noise_create_initiation_with_ephemeral(struct tl_msg_initiation *m, struct tl_handshake *hs,
					      const struct tl_identity *id, uint32_t local_index,
					      const uint8_t timestamp[TL_TIMESTAMP_LEN],
					      const uint8_t ephemeral_priv[TL_KEY_LEN], uint64_t now_ns)
{
	struct tl_noise_tmp t;
	bool ok = false;

	if (!id->has_key)
		return TL_NOISE_EINVAL;
	memset(m, 0, sizeof(*m));
	memcpy(t.e_priv, ephemeral_priv, TL_KEY_LEN);
	m->type = tl_msg_type_word(TL_MSG_INITIATION);
	m->sender = local_index;
	tl_noise_start(&t, hs->remote_static);
	/* e */
	tl_x25519_public(m->ephemeral, t.e_priv);
	tl_mix_ephemeral(&t, m->ephemeral);
	/* es */
	if (tl_mix_dh_key(&t, t.e_priv, hs->remote_static))
		goto out;
	/* s */
	tl_encrypt_and_hash(&t, m->static_enc, id->pub, TL_KEY_LEN);
	/* ss */
	if (tl_mix_precomputed(&t, hs->precomputed_ss))
		goto out;
	/* {t} */
	tl_encrypt_and_hash(&t, m->timestamp_enc, timestamp, TL_TIMESTAMP_LEN);
	hs->remote_index = 0;
	ok = true;
out:
	return tl_hs_created(hs, &t, ok, TL_HS_CREATED_INITIATION, local_index, m, sizeof(*m), now_ns);
}

int tl_noise_create_initiation(struct tl_msg_initiation *m, struct tl_handshake *hs,
			       const struct tl_identity *id, uint32_t local_index,
			       const uint8_t timestamp[TL_TIMESTAMP_LEN], uint64_t now_ns)
{
	uint8_t e_priv[TL_KEY_LEN];
	int ret;

	tl_x25519_generate(e_priv);
	ret = tl_noise_create_initiation_with_ephemeral(m, hs, id, local_index, timestamp, e_priv,
							now_ns);
	tl_wipe(e_priv, sizeof(e_priv));
	return ret;
}

static bool tl_initiation_is_flood(const struct tl_handshake *hs, uint64_t now_ns)
{
	return hs->last_initiation_consumption_ns &&
	       now_ns - hs->last_initiation_consumption_ns < TL_INITIATIONS_MIN_INTERVAL_NS;
}

/* Reads e, es, s and returns the peer whose static key was sent, or an error. */
static int tl_initiation_read_static(struct tl_noise_tmp *t, const struct tl_msg_initiation *m,
				     const struct tl_identity *id)
{
	tl_noise_start(t, id->pub);
	/* e */
	tl_mix_ephemeral(t, m->ephemeral);
	/* es */
	if (tl_mix_dh_key(t, id->priv, m->ephemeral))
		return TL_NOISE_EAUTH;
	/* s */
	if (tl_decrypt_and_hash(t, t->remote_static, m->static_enc, TL_KEY_LEN))
		return TL_NOISE_EAUTH;
	return TL_NOISE_OK;
}

/* Reads ss, {t} for the peer found. */
static int tl_initiation_read_timestamp(struct tl_noise_tmp *t, const struct tl_msg_initiation *m,
					const struct tl_handshake *hs)
{
	/* ss */
	if (tl_mix_precomputed(t, hs->precomputed_ss))
		return TL_NOISE_EAUTH;
	/* {t} */
	if (tl_decrypt_and_hash(t, t->timestamp, m->timestamp_enc, TL_TIMESTAMP_LEN))
		return TL_NOISE_EAUTH;
	return TL_NOISE_OK;
}

/* An authentic initiation is taken if it is newer than every one before (replay) and not
 * within 20 ms of the last taken (flood). */
static int tl_initiation_fresh(const struct tl_handshake *hs, const uint8_t timestamp[TL_TIMESTAMP_LEN],
			       uint64_t now_ns)
{
	if (memcmp(timestamp, hs->latest_timestamp, TL_TIMESTAMP_LEN) <= 0)
		return TL_NOISE_EREPLAY;
	if (tl_initiation_is_flood(hs, now_ns))
		return TL_NOISE_EFLOOD;
	return TL_NOISE_OK;
}

/* Reads the whole initiation: the peer it comes from (*out) and its timestamp (t->timestamp). */
static int tl_initiation_read(struct tl_noise_tmp *t, const struct tl_msg_initiation *m,
			      const struct tl_identity *id, tl_static_lookup_fn lookup, void *arg,
			      struct tl_handshake **out)
{
	int ret;

	*out = NULL;
	if (!id->has_key || m->type != tl_msg_type_word(TL_MSG_INITIATION))
		return TL_NOISE_EINVAL;
	ret = tl_initiation_read_static(t, m, id);
	if (ret)
		return ret;
	*out = lookup(arg, t->remote_static);
	if (!*out)
		return TL_NOISE_EUNKNOWN_PEER;
	return tl_initiation_read_timestamp(t, m, *out);
}

/* The initiation is taken: the peer's handshake records it. */
static void tl_initiation_taken(struct tl_handshake *hs, const struct tl_msg_initiation *m,
				const uint8_t timestamp[TL_TIMESTAMP_LEN], uint64_t now_ns)
{
	memcpy(hs->remote_ephemeral, m->ephemeral, TL_KEY_LEN);
	memcpy(hs->latest_timestamp, timestamp, TL_TIMESTAMP_LEN);
	hs->last_initiation_consumption_ns = now_ns;
	hs->remote_index = m->sender;
}

int tl_noise_consume_initiation(const struct tl_msg_initiation *m, const struct tl_identity *id,
				tl_static_lookup_fn lookup, void *arg, uint64_t now_ns,
				struct tl_handshake **out)
{
	struct tl_noise_tmp t;
	struct tl_handshake *hs;
	int ret;

	*out = NULL;
	ret = tl_initiation_read(&t, m, id, lookup, arg, &hs);
	if (!ret)
		ret = tl_initiation_fresh(hs, t.timestamp, now_ns);
	if (!ret) {
		tl_initiation_taken(hs, m, t.timestamp, now_ns);
		tl_hs_commit(hs, &t, TL_HS_CONSUMED_INITIATION);
		*out = hs;
	}
	tl_noise_tmp_wipe(&t);
	return ret;
}

/* ---- response: e, ee, se, psk, {} ------------------------------------------------------- */

/* e, ee, se, psk, {} from the state after the initiation (t->ck, t->h): all of the response
 * but its sender index and MACs. */
static int tl_response_build(struct tl_noise_tmp *t, struct tl_msg_response *m,
			     const uint8_t ephemeral_priv[TL_KEY_LEN], uint32_t remote_index,
			     const uint8_t remote_ephemeral[TL_KEY_LEN],
			     const uint8_t remote_static[TL_KEY_LEN], const uint8_t psk[TL_KEY_LEN])
{
	memset(m, 0, sizeof(*m));
	memcpy(t->e_priv, ephemeral_priv, TL_KEY_LEN);
	m->type = tl_msg_type_word(TL_MSG_RESPONSE);
	m->receiver = remote_index;
	/* e */
	tl_x25519_public(m->ephemeral, t->e_priv);
	tl_mix_ephemeral(t, m->ephemeral);
	/* ee, se */
	if (tl_mix_dh(t, t->e_priv, remote_ephemeral) || tl_mix_dh(t, t->e_priv, remote_static))
		return TL_NOISE_EAUTH;
	/* psk */
	tl_mix_psk(t, psk);
	/* {} */
	tl_encrypt_and_hash(t, m->empty_enc, (const uint8_t *)"", 0);
	return TL_NOISE_OK;
}

int tl_noise_create_response_with_ephemeral(struct tl_msg_response *m, struct tl_handshake *hs,
					    uint32_t local_index,
					    const uint8_t ephemeral_priv[TL_KEY_LEN], uint64_t now_ns)
{
	struct tl_noise_tmp t;
	bool ok;

	if (hs->state != TL_HS_CONSUMED_INITIATION)
		return TL_NOISE_EINVAL;
	memcpy(t.ck, hs->chaining_key, TL_HASH_LEN);
	memcpy(t.h, hs->hash, TL_HASH_LEN);
	ok = tl_response_build(&t, m, ephemeral_priv, hs->remote_index, hs->remote_ephemeral,
			       hs->remote_static, hs->psk) == TL_NOISE_OK;
	m->sender = local_index;
	return tl_hs_created(hs, &t, ok, TL_HS_CREATED_RESPONSE, local_index, m, sizeof(*m), now_ns);
}

int tl_noise_create_response(struct tl_msg_response *m, struct tl_handshake *hs,
			     uint32_t local_index, uint64_t now_ns)
{
	uint8_t e_priv[TL_KEY_LEN];
	int ret;

	tl_x25519_generate(e_priv);
	ret = tl_noise_create_response_with_ephemeral(m, hs, local_index, e_priv, now_ns);
	tl_wipe(e_priv, sizeof(e_priv));
	return ret;
}

static int tl_response_read(struct tl_noise_tmp *t, const struct tl_msg_response *m,
			    const struct tl_handshake *hs, const struct tl_identity *id)
{
	uint8_t empty[1];

	memcpy(t->ck, hs->chaining_key, TL_HASH_LEN);
	memcpy(t->h, hs->hash, TL_HASH_LEN);
	/* e */
	tl_mix_ephemeral(t, m->ephemeral);
	/* ee, se */
	if (tl_mix_dh(t, hs->ephemeral_priv, m->ephemeral) ||
	    tl_mix_dh(t, id->priv, m->ephemeral))
		return TL_NOISE_EAUTH;
	/* psk */
	tl_mix_psk(t, hs->psk);
	/* {} */
	if (tl_decrypt_and_hash(t, empty, m->empty_enc, 0))
		return TL_NOISE_EAUTH;
	return TL_NOISE_OK;
}

/* The handshake a response answers: ours, still waiting for it. */
static int tl_response_answers(const struct tl_msg_response *m, const struct tl_identity *id,
			       tl_index_lookup_fn lookup, void *arg, struct tl_handshake **out)
{
	*out = NULL;
	if (!id->has_key || m->type != tl_msg_type_word(TL_MSG_RESPONSE))
		return TL_NOISE_EINVAL;
	*out = lookup(arg, m->receiver);
	if (!*out)
		return TL_NOISE_EUNKNOWN_PEER;
	return (*out)->state == TL_HS_CREATED_INITIATION ? TL_NOISE_OK : TL_NOISE_EINVAL;
}

int tl_noise_consume_response(const struct tl_msg_response *m, const struct tl_identity *id,
			      tl_index_lookup_fn lookup, void *arg, struct tl_handshake **out)
{
	struct tl_noise_tmp t;
	struct tl_handshake *hs;
	int ret;

	*out = NULL;
	ret = tl_response_answers(m, id, lookup, arg, &hs);
	if (ret)
		return ret;
	ret = tl_response_read(&t, m, hs, id);
	if (!ret) {
		memcpy(hs->remote_ephemeral, m->ephemeral, TL_KEY_LEN);
		hs->remote_index = m->sender;
		tl_hs_commit(hs, &t, TL_HS_CONSUMED_RESPONSE);
		*out = hs;
	}
	tl_noise_tmp_wipe(&t);
	return ret;
}

/* ---- transport keys ------------------------------------------------------------------- */

/* (T_send, T_recv) = KDF2(ck, empty) for the initiator; swapped for the responder. */
static void tl_derive_keys(const uint8_t ck[TL_HASH_LEN], bool initiator, struct tl_session_keys *out)
{
	if (initiator)
		tl_kdf(out->send, out->recv, NULL, ck, NULL, 0);
	else
		tl_kdf(out->recv, out->send, NULL, ck, NULL, 0);
	out->initiator = initiator;
}

int tl_noise_derive_session(struct tl_handshake *hs, struct tl_session_keys *out)
{
	bool initiator;

	if (hs->state == TL_HS_CONSUMED_RESPONSE)
		initiator = true;
	else if (hs->state == TL_HS_CREATED_RESPONSE)
		initiator = false;
	else
		return TL_NOISE_EINVAL;
	tl_derive_keys(hs->chaining_key, initiator, out);
	out->local_index = hs->local_index;
	out->remote_index = hs->remote_index;
	tl_handshake_clear(hs);
	return TL_NOISE_OK;
}

/* ---- answering in two passes ------------------------------------------------------------ */

void tl_noise_job_wipe(struct tl_noise_job *j)
{
	tl_wipe(j, sizeof(*j));
}

void tl_noise_answer_initiation_with_ephemeral(struct tl_noise_job *j, const struct tl_msg_initiation *m,
					       const struct tl_identity *id, tl_static_lookup_fn lookup,
					       void *arg, const uint8_t ephemeral_priv[TL_KEY_LEN])
{
	struct tl_noise_tmp t;
	struct tl_handshake *hs;

	tl_noise_job_wipe(j);
	j->status = tl_initiation_read(&t, m, id, lookup, arg, &hs);
	if (!j->status)
		j->status = tl_response_build(&t, &j->resp, ephemeral_priv, m->sender, m->ephemeral,
					      hs->remote_static, hs->psk);
	if (!j->status) {
		j->hs = hs;
		memcpy(j->timestamp, t.timestamp, TL_TIMESTAMP_LEN);
		tl_derive_keys(t.ck, false, &j->keys);
		j->keys.remote_index = m->sender;
	} else {
		memset(&j->resp, 0, sizeof(j->resp));
	}
	tl_noise_tmp_wipe(&t);
}

void tl_noise_answer_initiation(struct tl_noise_job *j, const struct tl_msg_initiation *m,
				const struct tl_identity *id, tl_static_lookup_fn lookup, void *arg)
{
	uint8_t e_priv[TL_KEY_LEN];

	tl_x25519_generate(e_priv);
	tl_noise_answer_initiation_with_ephemeral(j, m, id, lookup, arg, e_priv);
	tl_wipe(e_priv, sizeof(e_priv));
}

int tl_noise_check_initiation(const struct tl_noise_job *j, uint64_t now_ns)
{
	return j->status ? j->status : tl_initiation_fresh(j->hs, j->timestamp, now_ns);
}

int tl_noise_commit_initiation(struct tl_noise_job *j, const struct tl_msg_initiation *m,
			       uint32_t local_index, uint64_t now_ns, struct tl_msg_response *out)
{
	struct tl_handshake *hs = j->hs;
	int ret = tl_noise_check_initiation(j, now_ns);

	if (ret)
		return ret;
	/* Consumed, answered and the session derived at once: what is left of the handshake
	 * is what the next initiation is checked against. */
	tl_initiation_taken(hs, m, j->timestamp, now_ns);
	tl_handshake_clear(hs);
	hs->local_index = local_index;
	j->keys.local_index = local_index;
	*out = j->resp;
	out->sender = local_index;
	tl_cookie_add_macs(out, sizeof(*out), hs, now_ns);
	return TL_NOISE_OK;
}

void tl_noise_answer_response(struct tl_noise_job *j, const struct tl_msg_response *m,
			      const struct tl_identity *id, tl_index_lookup_fn lookup, void *arg)
{
	struct tl_noise_tmp t;
	struct tl_handshake *hs;

	tl_noise_job_wipe(j);
	j->status = tl_response_answers(m, id, lookup, arg, &hs);
	if (j->status)
		return;
	j->status = tl_response_read(&t, m, hs, id);
	if (!j->status) {
		j->hs = hs;
		tl_derive_keys(t.ck, true, &j->keys);
		j->keys.local_index = m->receiver;
		j->keys.remote_index = m->sender;
	}
	tl_noise_tmp_wipe(&t);
}

int tl_noise_commit_response(struct tl_noise_job *j, const struct tl_msg_response *m,
			     tl_index_lookup_fn lookup, void *arg)
{
	if (j->status)
		return j->status;
	/* The handshake it answers must still be the one the first pass read. */
	if (lookup(arg, m->receiver) != j->hs || j->hs->state != TL_HS_CREATED_INITIATION)
		return TL_NOISE_EINVAL;
	tl_handshake_clear(j->hs);
	return TL_NOISE_OK;
}
