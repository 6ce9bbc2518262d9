/* Thin wrappers over libsodium (X25519, ChaCha20-Poly1305 for the handshake,
 * XChaCha20-Poly1305, randomness, wiping) and OpenSSL libcrypto (BLAKE2s, keyed BLAKE2s,
 * HMAC-BLAKE2s, the data path's ChaCha20-Poly1305 and its ChaCha20 and Poly1305). No
 * primitive is implemented here: the constructions over them are the protocol's KDF and
 * RFC 8439's AEAD (the data path's one-pass path, below). */
#include "crypto/primitives.h"

#include <endian.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <sodium.h>

#define TL_NONCE_LEN 12

/* Fetched once by tl_crypto_init; read-only (and so thread-safe) afterwards. */
static EVP_MD *tl_blake2s_md;
static EVP_MAC *tl_blake2s_mac;
static EVP_MAC *tl_hmac_mac;

/* A failing libcrypto call on fixed-size inputs means allocation failure or a broken
 * provider; carrying on with an unset MAC would be worse than stopping. */
static void tl_crypto_check(int ok)
{
	if (!ok)
		abort();
}

int tl_crypto_init(void)
{
	if (sodium_init() < 0)
		return -1;
	if (tl_blake2s_md && tl_blake2s_mac && tl_hmac_mac)
		return 0;
	tl_blake2s_md = EVP_MD_fetch(NULL, "BLAKE2S-256", NULL);
	tl_blake2s_mac = EVP_MAC_fetch(NULL, "BLAKE2SMAC", NULL);
	tl_hmac_mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!tl_blake2s_md || !tl_blake2s_mac || !tl_hmac_mac)
		return -1;
	return 0;
}

/* ---- BLAKE2s family ---------------------------------------------------------------- */

static void tl_md_update(EVP_MD_CTX *ctx, const void *p, size_t len)
{
	if (p && len)
		tl_crypto_check(EVP_DigestUpdate(ctx, p, len));
}

void tl_hash(uint8_t out[TL_HASH_LEN], const void *a, size_t alen, const void *b, size_t blen,
	     const void *c, size_t clen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int outl = 0;

	tl_crypto_check(ctx != NULL);
	tl_crypto_check(EVP_DigestInit_ex2(ctx, tl_blake2s_md, NULL));
	tl_md_update(ctx, a, alen);
	tl_md_update(ctx, b, blen);
	tl_md_update(ctx, c, clen);
	tl_crypto_check(EVP_DigestFinal_ex(ctx, out, &outl) && outl == TL_HASH_LEN);
	EVP_MD_CTX_free(ctx);
}

static void tl_mac_run(EVP_MAC *mac, const OSSL_PARAM *params, uint8_t *out, size_t outlen,
		       const uint8_t *key, size_t keylen, const void *in, size_t len)
{
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	size_t outl = 0;

	tl_crypto_check(ctx != NULL);
	tl_crypto_check(EVP_MAC_init(ctx, key, keylen, params));
	if (len)
		tl_crypto_check(EVP_MAC_update(ctx, in, len));
	tl_crypto_check(EVP_MAC_final(ctx, out, &outl, outlen) && outl == outlen);
	EVP_MAC_CTX_free(ctx);   /* clears the key schedule */
}

void tl_mac(uint8_t out[TL_MAC_LEN], const uint8_t *key, size_t keylen, const void *in, size_t len)
{
	size_t size = TL_MAC_LEN;
	OSSL_PARAM params[] = {
		OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &size),
		OSSL_PARAM_END,
	};

	tl_mac_run(tl_blake2s_mac, params, out, TL_MAC_LEN, key, keylen, in, len);
}

void tl_hmac(uint8_t out[TL_HASH_LEN], const uint8_t *key, size_t keylen, const void *in, size_t len)
{
	char digest[] = "BLAKE2S-256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_END,
	};

	tl_mac_run(tl_hmac_mac, params, out, TL_HASH_LEN, key, keylen, in, len);
}

/* KDF_n (whitepaper §5.4): tau0 = HMAC(key, in), tau_i = HMAC(tau0, tau_{i-1} || i). */
void tl_kdf(uint8_t t1[TL_HASH_LEN], uint8_t t2[TL_HASH_LEN], uint8_t t3[TL_HASH_LEN],
	    const uint8_t key[TL_HASH_LEN], const void *in, size_t len)
{
	uint8_t prk[TL_HASH_LEN], buf[TL_HASH_LEN + 1];

	tl_hmac(prk, key, TL_HASH_LEN, in, len);

	buf[0] = 1;
	tl_hmac(buf, prk, TL_HASH_LEN, buf, 1);
	memcpy(t1, buf, TL_HASH_LEN);
	if (t2) {
		buf[TL_HASH_LEN] = 2;
		tl_hmac(buf, prk, TL_HASH_LEN, buf, TL_HASH_LEN + 1);
		memcpy(t2, buf, TL_HASH_LEN);
	}
	if (t2 && t3) {
		buf[TL_HASH_LEN] = 3;
		tl_hmac(buf, prk, TL_HASH_LEN, buf, TL_HASH_LEN + 1);
		memcpy(t3, buf, TL_HASH_LEN);
	}
	tl_wipe(prk, sizeof(prk));
	tl_wipe(buf, sizeof(buf));
}

/* ---- X25519 ------------------------------------------------------------------------ */

void tl_x25519_generate(uint8_t priv[TL_KEY_LEN])
{
	randombytes_buf(priv, TL_KEY_LEN);
	priv[0] &= 248;
	priv[31] &= 127;
	priv[31] |= 64;
}

void tl_x25519_public(uint8_t pub[TL_KEY_LEN], const uint8_t priv[TL_KEY_LEN])
{
	if (crypto_scalarmult_base(pub, priv) != 0)
		memset(pub, 0, TL_KEY_LEN);
}

int tl_dh(uint8_t out[TL_KEY_LEN], const uint8_t priv[TL_KEY_LEN], const uint8_t pub[TL_KEY_LEN])
{
	if (crypto_scalarmult(out, priv, pub) != 0 || sodium_is_zero(out, TL_KEY_LEN)) {
		sodium_memzero(out, TL_KEY_LEN);
		return -1;
	}
	return 0;
}

/* ---- handshake AEADs (libsodium) ----------------------------------------------------- */

static void tl_nonce_from_counter(uint8_t nonce[TL_NONCE_LEN], uint64_t counter)
{
	uint64_t le = htole64(counter);

	memset(nonce, 0, 4);
	memcpy(nonce + 4, &le, sizeof(le));
}

void tl_aead_seal(uint8_t *out, const uint8_t *in, size_t len, uint64_t counter,
		  const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN])
{
	uint8_t nonce[TL_NONCE_LEN];

	tl_nonce_from_counter(nonce, counter);
	crypto_aead_chacha20poly1305_ietf_encrypt(out, NULL, in, len, ad, adlen, NULL, nonce, key);
}

int tl_aead_open(uint8_t *out, const uint8_t *in, size_t sealed_len, uint64_t counter,
		 const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN])
{
	uint8_t nonce[TL_NONCE_LEN];

	if (sealed_len < TL_AEAD_TAG_LEN)
		return -1;
	tl_nonce_from_counter(nonce, counter);
	return crypto_aead_chacha20poly1305_ietf_decrypt(out, NULL, NULL, in, sealed_len, ad, adlen,
							 nonce, key) == 0 ? 0 : -1;
}

void tl_xaead_seal(uint8_t *out, const uint8_t *in, size_t len, const uint8_t nonce[TL_XNONCE_LEN],
		   const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN])
{
	crypto_aead_xchacha20poly1305_ietf_encrypt(out, NULL, in, len, ad, adlen, NULL, nonce, key);
}

int tl_xaead_open(uint8_t *out, const uint8_t *in, size_t sealed_len,
		  const uint8_t nonce[TL_XNONCE_LEN], const uint8_t *ad, size_t adlen,
		  const uint8_t key[TL_KEY_LEN])
{
	if (sealed_len < TL_AEAD_TAG_LEN)
		return -1;
	return crypto_aead_xchacha20poly1305_ietf_decrypt(out, NULL, NULL, in, sealed_len, ad, adlen,
							  nonce, key) == 0 ? 0 : -1;
}

/* ---- randomness and memory ------------------------------------------------------------ */

void tl_random(void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

uint32_t tl_random_u32(void)
{
	return randombytes_random();
}

void tl_wipe(void *buf, size_t len)
{
	sodium_memzero(buf, len);
}

bool tl_equal(const void *a, const void *b, size_t len)
{
	return sodium_memcmp(a, b, len) == 0;
}

bool tl_is_zero(const void *a, size_t len)
{
	return sodium_is_zero(a, len) == 1;
}

/* ---- data-path AEAD (OpenSSL's providers, called directly) --------------------------- */

/* ChaCha20-Poly1305 without associated data, made of OpenSSL's primitives in two ways:
 *  - the one-pass path: RFC 8439 §2.8's construction over OpenSSL's ChaCha20 and Poly1305.
 *    One ChaCha20 call per message covers the Poly1305 key's block (counter 0) and the
 *    message rounded up to whole blocks, using the 64 bytes before the message and up to 63
 *    after it as scratch (their contents are put back); Poly1305 then runs over the
 *    ciphertext, its padding and the lengths. Opening writes the keystream's output to the
 *    context's scratch buffer, checks the tag over the ciphertext still in place, and only
 *    then copies the plaintext over it.
 *  - the whole path: OpenSSL's own ChaCha20-Poly1305, for a buffer without that room.
 * Why two: OpenSSL's AEAD runs the Poly1305 key's block and a message's last partial block
 * through one-block ChaCha20 calls of their own, each waiting on the latency of one block's
 * rounds (about 130 ns here): 921 ns for a 1 420-byte message against 795 for 1 408 bytes,
 * and 385 ns for 12 bytes. docs/results/2026-11-27-aead.md has the measurements. Both paths
 * agree with libsodium's AEAD on every length (tests/unit/crypto).
 * Every OpenSSL primitive is called through its provider's own dispatch table
 * (provider-cipher(7), provider-mac(7)) rather than EVP: per packet, EVP looked the IV
 * length up by parameter name (EVP_CIPHER_CTX_get_iv_length in every Init) and translated
 * EVP_CIPHER_CTX_ctrl into parameters for the tag, about 7 % of a packet's CPU time in the
 * synthetic pipeline. The providers' contexts are made once; each packet sets the nonce, and
 * the key only when it differs from the previous packet's on that context (a burst usually
 * shares one keypair). The fetched EVP objects keep the providers, and so the functions,
 * loaded. */
#define TL_DP_AEAD "ChaCha20-Poly1305"
#define TL_DP_STREAM "ChaCha20"
#define TL_DP_MAC "POLY1305"
#define TL_DP_BLOCK 64                  /* a ChaCha20 block */
#define TL_DP_POLY_KEY_LEN 32
#define TL_DP_STREAM_IV_LEN 16          /* the block counter's 4 bytes, then the nonce */
#define TL_DP_SCRATCH_MAX 65536         /* the largest message the one-pass path opens */

struct tl_dp_cipher_fns {
	void *provctx;
	OSSL_FUNC_cipher_newctx_fn *newctx;
	OSSL_FUNC_cipher_freectx_fn *freectx;
	OSSL_FUNC_cipher_encrypt_init_fn *einit;
	OSSL_FUNC_cipher_decrypt_init_fn *dinit;
	OSSL_FUNC_cipher_update_fn *update;
	OSSL_FUNC_cipher_final_fn *final;
	OSSL_FUNC_cipher_get_ctx_params_fn *get_params;
};

struct tl_dp_mac_fns {
	void *provctx;
	OSSL_FUNC_mac_newctx_fn *newctx;
	OSSL_FUNC_mac_freectx_fn *freectx;
	OSSL_FUNC_mac_init_fn *init;
	OSSL_FUNC_mac_update_fn *update;
	OSSL_FUNC_mac_final_fn *final;
};

/* A provider's cipher context and the key it holds. */
struct tl_dp_keyed {
	void *ctx;
	uint8_t key[TL_KEY_LEN];
	bool keyed;
};

struct tl_dp_aead {
	EVP_CIPHER *aead_cipher;   /* NULL: made unusable on purpose (tests) */
	EVP_CIPHER *stream_cipher;
	EVP_MAC *mac;
	struct tl_dp_cipher_fns aead, stream;
	struct tl_dp_mac_fns poly;
	struct tl_dp_keyed enc, dec;       /* the whole path's */
	struct tl_dp_keyed s_enc, s_dec;   /* the one-pass path's ChaCha20 */
	void *poly_ctx;
	uint8_t *scratch;                  /* TL_DP_BLOCK + TL_DP_SCRATCH_MAX bytes */
};

/* Whether the provider's colon-separated name list holds name. */
static bool tl_dp_names_match(const char *names, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = names; p && *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncasecmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static void tl_dp_take_cipher(void *to, const OSSL_DISPATCH *fn)
{
	struct tl_dp_cipher_fns *c = to;

	switch (fn->function_id) {
	case OSSL_FUNC_CIPHER_NEWCTX: c->newctx = OSSL_FUNC_cipher_newctx(fn); break;
	case OSSL_FUNC_CIPHER_FREECTX: c->freectx = OSSL_FUNC_cipher_freectx(fn); break;
	case OSSL_FUNC_CIPHER_ENCRYPT_INIT: c->einit = OSSL_FUNC_cipher_encrypt_init(fn); break;
	case OSSL_FUNC_CIPHER_DECRYPT_INIT: c->dinit = OSSL_FUNC_cipher_decrypt_init(fn); break;
	case OSSL_FUNC_CIPHER_UPDATE: c->update = OSSL_FUNC_cipher_update(fn); break;
	case OSSL_FUNC_CIPHER_FINAL: c->final = OSSL_FUNC_cipher_final(fn); break;
	case OSSL_FUNC_CIPHER_GET_CTX_PARAMS: c->get_params = OSSL_FUNC_cipher_get_ctx_params(fn); break;
	default: break;
	}
}

static void tl_dp_take_mac(void *to, const OSSL_DISPATCH *fn)
{
	struct tl_dp_mac_fns *m = to;

	switch (fn->function_id) {
	case OSSL_FUNC_MAC_NEWCTX: m->newctx = OSSL_FUNC_mac_newctx(fn); break;
	case OSSL_FUNC_MAC_FREECTX: m->freectx = OSSL_FUNC_mac_freectx(fn); break;
	case OSSL_FUNC_MAC_INIT: m->init = OSSL_FUNC_mac_init(fn); break;
	case OSSL_FUNC_MAC_UPDATE: m->update = OSSL_FUNC_mac_update(fn); break;
	case OSSL_FUNC_MAC_FINAL: m->final = OSSL_FUNC_mac_final(fn); break;
	default: break;
	}
}

/* Hands each function of the provider's implementation of name (operation op) to take;
 * returns the provider's context, or NULL without the provider or the implementation. */
static void *tl_dp_resolve(const OSSL_PROVIDER *prov, int op, const char *name,
			   void (*take)(void *, const OSSL_DISPATCH *), void *to)
{
	const OSSL_ALGORITHM *algs;
	const OSSL_DISPATCH *fn = NULL;
	int no_store = 0;

	if (!prov || !(algs = OSSL_PROVIDER_query_operation(prov, op, &no_store)))
		return NULL;
	for (const OSSL_ALGORITHM *alg = algs; alg->algorithm_names && !fn; alg++)
		if (tl_dp_names_match(alg->algorithm_names, name))
			fn = alg->implementation;
	for (const OSSL_DISPATCH *f = fn; f && f->function_id; f++)
		take(to, f);
	OSSL_PROVIDER_unquery_operation(prov, op, algs);
	return fn ? OSSL_PROVIDER_get0_provider_ctx(prov) : NULL;
}

/* Every function this file calls, or -1. */
static int tl_dp_resolve_all(struct tl_dp_aead *a)
{
	const struct tl_dp_cipher_fns *c = &a->aead, *s = &a->stream;
	const struct tl_dp_mac_fns *m = &a->poly;

	a->aead.provctx = tl_dp_resolve(EVP_CIPHER_get0_provider(a->aead_cipher), OSSL_OP_CIPHER,
					TL_DP_AEAD, tl_dp_take_cipher, &a->aead);
	a->stream.provctx = tl_dp_resolve(EVP_CIPHER_get0_provider(a->stream_cipher), OSSL_OP_CIPHER,
					  TL_DP_STREAM, tl_dp_take_cipher, &a->stream);
	a->poly.provctx = tl_dp_resolve(EVP_MAC_get0_provider(a->mac), OSSL_OP_MAC, TL_DP_MAC,
					tl_dp_take_mac, &a->poly);
	if (!c->provctx || !c->newctx || !c->freectx || !c->einit || !c->dinit || !c->update ||
	    !c->final || !c->get_params)
		return -1;
	if (!s->provctx || !s->newctx || !s->freectx || !s->einit || !s->update)
		return -1;
	return m->provctx && m->newctx && m->freectx && m->init && m->update && m->final ? 0 : -1;
}

/* cached == key, in time independent of where they differ: the XOR of all words (as
 * sodium_memcmp, without its byte-wise volatile loop, which was 1.7 % of a host-to-host
 * profile at one call per packet). */
static bool tl_dp_key_same(const uint8_t cached[TL_KEY_LEN], const uint8_t key[TL_KEY_LEN])
{
	uint64_t a, b, d = 0;

	for (size_t i = 0; i < TL_KEY_LEN; i += sizeof(a)) {
		memcpy(&a, cached + i, sizeof(a));
		memcpy(&b, key + i, sizeof(b));
		d |= a ^ b;
	}
	return d == 0;
}

/* The key to pass to the cipher: NULL keeps the one already scheduled in the context. */
static const uint8_t *tl_dp_key_change(struct tl_dp_keyed *k, const uint8_t key[TL_KEY_LEN])
{
	if (k->keyed && tl_dp_key_same(k->key, key))
		return NULL;
	memcpy(k->key, key, TL_KEY_LEN);
	k->keyed = true;
	return key;
}

static void tl_dp_keyed_free(const struct tl_dp_cipher_fns *c, struct tl_dp_keyed *k)
{
	if (k->ctx)
		c->freectx(k->ctx);   /* clears the key schedule */
	tl_wipe(k, sizeof(*k));
}

/* Frees the providers' contexts (their free clears the keys they hold). */
static void tl_dp_ctx_free(struct tl_dp_aead *a)
{
	tl_dp_keyed_free(&a->aead, &a->enc);
	tl_dp_keyed_free(&a->aead, &a->dec);
	tl_dp_keyed_free(&a->stream, &a->s_enc);
	tl_dp_keyed_free(&a->stream, &a->s_dec);
	if (a->poly_ctx)
		a->poly.freectx(a->poly_ctx);
	a->poly_ctx = NULL;
}

static int tl_dp_ctx_new(struct tl_dp_aead *a)
{
	a->enc.ctx = a->aead.newctx(a->aead.provctx);
	a->dec.ctx = a->aead.newctx(a->aead.provctx);
	a->s_enc.ctx = a->stream.newctx(a->stream.provctx);
	a->s_dec.ctx = a->stream.newctx(a->stream.provctx);
	a->poly_ctx = a->poly.newctx(a->poly.provctx);
	return a->enc.ctx && a->dec.ctx && a->s_enc.ctx && a->s_dec.ctx && a->poly_ctx ? 0 : -1;
}

struct tl_dp_aead *tl_dp_aead_new(void)
{
	struct tl_dp_aead *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->aead_cipher = EVP_CIPHER_fetch(NULL, TL_DP_AEAD, NULL);
	a->stream_cipher = EVP_CIPHER_fetch(NULL, TL_DP_STREAM, NULL);
	a->mac = EVP_MAC_fetch(NULL, TL_DP_MAC, NULL);
	a->scratch = aligned_alloc(TL_DP_BLOCK, TL_DP_BLOCK + TL_DP_SCRATCH_MAX);
	if (!a->aead_cipher || !a->stream_cipher || !a->mac || !a->scratch ||
	    tl_dp_resolve_all(a) != 0 || tl_dp_ctx_new(a) != 0) {
		tl_dp_aead_free(a);
		return NULL;
	}
	return a;
}

struct tl_dp_aead *tl_dp_aead_new_unusable(void)
{
	return calloc(1, sizeof(struct tl_dp_aead));
}

/* Freeing the providers' contexts clears their keys; new ones are made (not for a context
 * made unusable). */
int tl_dp_aead_forget(struct tl_dp_aead *a)
{
	tl_dp_ctx_free(a);
	return a->aead_cipher ? tl_dp_ctx_new(a) : 0;
}

bool tl_dp_aead_keyed(const struct tl_dp_aead *a)
{
	return a->enc.keyed || a->dec.keyed || a->s_enc.keyed || a->s_dec.keyed;
}

void tl_dp_aead_free(struct tl_dp_aead *a)
{
	if (!a)
		return;
	if (a->aead_cipher)
		tl_dp_ctx_free(a);
	EVP_CIPHER_free(a->aead_cipher);
	EVP_CIPHER_free(a->stream_cipher);
	EVP_MAC_free(a->mac);
	free(a->scratch);
	tl_wipe(a, sizeof(*a));
	free(a);
}

/* Bytes from the end of a len-byte message to the end of its last ChaCha20 block. */
static size_t tl_dp_slack(size_t len)
{
	return (TL_DP_BLOCK - len % TL_DP_BLOCK) % TL_DP_BLOCK;
}

/* Whether the one-pass path may run on a message with that room around it. */
static bool tl_dp_one_pass(size_t len, size_t head, size_t tail)
{
	return head >= TL_DP_BLOCK && tail >= tl_dp_slack(len) && len <= TL_DP_SCRATCH_MAX;
}

/* Poly1305 keyed with the key block's first 32 bytes over the ciphertext, its padding to
 * 16 bytes and the two lengths (the associated data's is 0). */
static int tl_dp_poly1305(struct tl_dp_aead *a, const uint8_t pkey[TL_DP_POLY_KEY_LEN],
			  const uint8_t *ct, size_t len, uint8_t out[TL_AEAD_TAG_LEN])
{
	static const uint8_t pad[16];
	uint64_t lens[2] = { 0, htole64(len) };
	size_t outl = 0;

	return a->poly.init(a->poly_ctx, pkey, TL_DP_POLY_KEY_LEN, NULL) &&
			       (!len || a->poly.update(a->poly_ctx, ct, len)) &&
			       (!(len % 16) || a->poly.update(a->poly_ctx, pad, 16 - len % 16)) &&
			       a->poly.update(a->poly_ctx, (const uint8_t *)lens, sizeof(lens)) &&
			       a->poly.final(a->poly_ctx, out, &outl, TL_AEAD_TAG_LEN) &&
			       outl == TL_AEAD_TAG_LEN ? 0 : -1;
}

/* The keystream from block 0 on XORed over n bytes from in to out (which may be in): the
 * context k keeps its key when it is the same. */
static bool tl_dp_stream(struct tl_dp_aead *a, struct tl_dp_keyed *k, const uint8_t key[TL_KEY_LEN],
			 uint64_t counter, uint8_t *out, const uint8_t *in, size_t n)
{
	uint8_t iv[TL_DP_STREAM_IV_LEN];
	const uint8_t *kc = tl_dp_key_change(k, key);
	size_t outl = 0;

	memset(iv, 0, 4);   /* the block counter */
	tl_nonce_from_counter(iv + 4, counter);
	if (!a->stream.einit(k->ctx, kc, kc ? TL_KEY_LEN : 0, iv, sizeof(iv), NULL)) {
		k->keyed = false;
		return false;
	}
	return a->stream.update(k->ctx, out, &outl, n, in, n) && outl == n;
}

static int tl_dp_seal_one_pass(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
			       uint8_t *buf, size_t len, uint8_t tag[TL_AEAD_TAG_LEN])
{
	uint8_t head[TL_DP_BLOCK], tail[TL_DP_BLOCK], pkey[TL_DP_POLY_KEY_LEN];
	uint8_t *from = buf - TL_DP_BLOCK;
	size_t slack = tl_dp_slack(len);
	bool ok;

	memcpy(head, from, TL_DP_BLOCK);
	memcpy(tail, buf + len, slack);
	ok = tl_dp_stream(a, &a->s_enc, key, counter, from, from, TL_DP_BLOCK + len + slack);
	for (size_t i = 0; i < sizeof(pkey); i++)
		pkey[i] = from[i] ^ head[i];
	memcpy(from, head, TL_DP_BLOCK);
	memcpy(buf + len, tail, slack);   /* before the tag, which may be there */
	ok = ok && tl_dp_poly1305(a, pkey, buf, len, tag) == 0;
	tl_wipe(pkey, sizeof(pkey));
	return ok ? 0 : -1;
}

static int tl_dp_open_one_pass(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
			       uint8_t *buf, size_t len, const uint8_t tag[TL_AEAD_TAG_LEN])
{
	uint8_t pkey[TL_DP_POLY_KEY_LEN], want[TL_AEAD_TAG_LEN], got[TL_AEAD_TAG_LEN];
	const uint8_t *from = buf - TL_DP_BLOCK;
	bool ok;

	memcpy(want, tag, sizeof(want));
	ok = tl_dp_stream(a, &a->s_dec, key, counter, a->scratch, from, TL_DP_BLOCK + len + tl_dp_slack(len));
	for (size_t i = 0; i < sizeof(pkey); i++)
		pkey[i] = a->scratch[i] ^ from[i];
	ok = ok && tl_dp_poly1305(a, pkey, buf, len, got) == 0 &&
	     CRYPTO_memcmp(got, want, sizeof(got)) == 0;
	if (ok)
		memcpy(buf, a->scratch + TL_DP_BLOCK, len);
	tl_wipe(pkey, sizeof(pkey));
	tl_wipe(a->scratch, TL_DP_POLY_KEY_LEN);
	return ok ? 0 : -1;
}

int tl_dp_aead_seal(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, uint8_t tag[TL_AEAD_TAG_LEN], size_t head, size_t tail)
{
	uint8_t nonce[TL_NONCE_LEN];
	OSSL_PARAM params[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	const uint8_t *k;
	size_t outl = 0, finl = 0;

	if (len > INT_MAX || !a->aead_cipher)
		return -1;
	if (tl_dp_one_pass(len, head, tail))
		return tl_dp_seal_one_pass(a, key, counter, buf, len, tag);
	tl_nonce_from_counter(nonce, counter);
	k = tl_dp_key_change(&a->enc, key);
	if (!a->aead.einit(a->enc.ctx, k, k ? TL_KEY_LEN : 0, nonce, sizeof(nonce), NULL)) {
		a->enc.keyed = false;
		return -1;
	}
	if (len && !a->aead.update(a->enc.ctx, buf, &outl, len, buf, len))
		return -1;
	if (!a->aead.final(a->enc.ctx, buf + outl, &finl, len - outl))
		return -1;
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
						      TL_AEAD_TAG_LEN);
	if (!a->aead.get_params(a->enc.ctx, params))
		return -1;
	return 0;
}

/* On failure buf holds ciphertext (the one-pass path) or unauthenticated bytes (the whole
 * path): the caller must drop the packet. */
int tl_dp_aead_open(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, const uint8_t tag[TL_AEAD_TAG_LEN], size_t head, size_t tail)
{
	uint8_t nonce[TL_NONCE_LEN], t[TL_AEAD_TAG_LEN];
	OSSL_PARAM params[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	const uint8_t *k;
	size_t outl = 0, finl = 0;

	if (len > INT_MAX || !a->aead_cipher)
		return -1;
	if (tl_dp_one_pass(len, head, tail))
		return tl_dp_open_one_pass(a, key, counter, buf, len, tag);
	tl_nonce_from_counter(nonce, counter);
	memcpy(t, tag, sizeof(t));
	/* the expected tag goes in with the nonce: the provider sets its parameters after
	 * the nonce, and Final compares against it */
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, t, sizeof(t));
	k = tl_dp_key_change(&a->dec, key);
	if (!a->aead.dinit(a->dec.ctx, k, k ? TL_KEY_LEN : 0, nonce, sizeof(nonce), params)) {
		a->dec.keyed = false;
		return -1;
	}
	if (len && !a->aead.update(a->dec.ctx, buf, &outl, len, buf, len))
		return -1;
	if (!a->aead.final(a->dec.ctx, buf + outl, &finl, len - outl))
		return -1;
	return 0;
}
