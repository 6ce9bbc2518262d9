/* Thin wrappers over libsodium (X25519, ChaCha20-Poly1305 for the handshake,
 * XChaCha20-Poly1305, randomness, wiping) and OpenSSL libcrypto (BLAKE2s, keyed BLAKE2s,
 * HMAC-BLAKE2s, data-path ChaCha20-Poly1305). No primitive is implemented here. */
#include "crypto/primitives.h"

#include <endian.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
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

/* ---- data-path AEAD (OpenSSL's provider, called directly) ---------------------------- */

/* The cipher is OpenSSL's ChaCha20-Poly1305 as its provider implements it, called through
 * the provider's own dispatch table (provider-cipher(7)) rather than EVP_CIPHER_CTX: per
 * packet, EVP looked the IV length up by parameter name (EVP_CIPHER_CTX_get_iv_length in
 * every Init) and went through EVP_CIPHER_CTX_ctrl's translation into parameters for the
 * tag, about 7 % of a packet's CPU time in the synthetic pipeline. The provider's context
 * is made once; each packet sets the nonce, and the key only when it differs from the
 * previous packet's on that context (a burst usually shares one keypair, and re-keying is
 * a measurable part of a small packet's cost). The fetched EVP_CIPHER keeps the provider,
 * and so the functions, loaded. */
struct tl_dp_aead {
	EVP_CIPHER *cipher;   /* NULL: made unusable on purpose (tests) */
	void *provctx;
	OSSL_FUNC_cipher_newctx_fn *newctx;
	OSSL_FUNC_cipher_freectx_fn *freectx;
	OSSL_FUNC_cipher_encrypt_init_fn *einit;
	OSSL_FUNC_cipher_decrypt_init_fn *dinit;
	OSSL_FUNC_cipher_update_fn *update;
	OSSL_FUNC_cipher_final_fn *final;
	OSSL_FUNC_cipher_get_ctx_params_fn *get_params;
	void *enc;            /* the provider's contexts */
	void *dec;
	uint8_t enc_key[TL_KEY_LEN];
	uint8_t dec_key[TL_KEY_LEN];
	bool enc_keyed;
	bool dec_keyed;
};

#define TL_DP_CIPHER "ChaCha20-Poly1305"

/* Whether the provider's colon-separated name list holds the cipher's name. */
static bool tl_dp_names_match(const char *names)
{
	size_t n = strlen(TL_DP_CIPHER);

	for (const char *p = names; p && *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncasecmp(p, TL_DP_CIPHER, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* The provider's functions for the cipher; -1 if it lacks one this file calls. */
static int tl_dp_resolve(struct tl_dp_aead *a)
{
	const OSSL_PROVIDER *prov = EVP_CIPHER_get0_provider(a->cipher);
	const OSSL_ALGORITHM *algs;
	const OSSL_DISPATCH *fn = NULL;
	int no_store = 0;

	if (!prov || !(algs = OSSL_PROVIDER_query_operation(prov, OSSL_OP_CIPHER, &no_store)))
		return -1;
	for (const OSSL_ALGORITHM *alg = algs; alg->algorithm_names && !fn; alg++)
		if (tl_dp_names_match(alg->algorithm_names))
			fn = alg->implementation;
	for (; fn && fn->function_id; fn++) {
		switch (fn->function_id) {
		case OSSL_FUNC_CIPHER_NEWCTX: a->newctx = OSSL_FUNC_cipher_newctx(fn); break;
		case OSSL_FUNC_CIPHER_FREECTX: a->freectx = OSSL_FUNC_cipher_freectx(fn); break;
		case OSSL_FUNC_CIPHER_ENCRYPT_INIT: a->einit = OSSL_FUNC_cipher_encrypt_init(fn); break;
		case OSSL_FUNC_CIPHER_DECRYPT_INIT: a->dinit = OSSL_FUNC_cipher_decrypt_init(fn); break;
		case OSSL_FUNC_CIPHER_UPDATE: a->update = OSSL_FUNC_cipher_update(fn); break;
		case OSSL_FUNC_CIPHER_FINAL: a->final = OSSL_FUNC_cipher_final(fn); break;
		case OSSL_FUNC_CIPHER_GET_CTX_PARAMS:
			a->get_params = OSSL_FUNC_cipher_get_ctx_params(fn);
			break;
		default: break;
		}
	}
	OSSL_PROVIDER_unquery_operation(prov, OSSL_OP_CIPHER, algs);
	a->provctx = OSSL_PROVIDER_get0_provider_ctx(prov);
	return a->newctx && a->freectx && a->einit && a->dinit && a->update && a->final &&
			       a->get_params ? 0 : -1;
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
static const uint8_t *tl_dp_key_change(uint8_t cached[TL_KEY_LEN], bool *keyed,
				       const uint8_t key[TL_KEY_LEN])
{
	if (*keyed && tl_dp_key_same(cached, key))
		return NULL;
	memcpy(cached, key, TL_KEY_LEN);
	*keyed = true;
	return key;
}

/* Frees the provider's contexts (their free clears the key schedule). */
static void tl_dp_ctx_free(struct tl_dp_aead *a)
{
	if (a->enc)
		a->freectx(a->enc);
	if (a->dec)
		a->freectx(a->dec);
	a->enc = a->dec = NULL;
}

static int tl_dp_ctx_new(struct tl_dp_aead *a)
{
	a->enc = a->newctx(a->provctx);
	a->dec = a->newctx(a->provctx);
	return a->enc && a->dec ? 0 : -1;
}

struct tl_dp_aead *tl_dp_aead_new(void)
{
	struct tl_dp_aead *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->cipher = EVP_CIPHER_fetch(NULL, TL_DP_CIPHER, NULL);
	if (!a->cipher || tl_dp_resolve(a) != 0 || tl_dp_ctx_new(a) != 0) {
		tl_dp_aead_free(a);
		return NULL;
	}
	return a;
}

struct tl_dp_aead *tl_dp_aead_new_unusable(void)
{
	return calloc(1, sizeof(struct tl_dp_aead));
}

/* Freeing the provider's contexts clears their key schedules; new ones are made (not for
 * a context made unusable). */
int tl_dp_aead_forget(struct tl_dp_aead *a)
{
	int ok = 0;

	if (a->cipher) {
		tl_dp_ctx_free(a);
		ok = tl_dp_ctx_new(a);
	}
	tl_wipe(a->enc_key, sizeof(a->enc_key));
	tl_wipe(a->dec_key, sizeof(a->dec_key));
	a->enc_keyed = a->dec_keyed = false;
	return ok;
}

bool tl_dp_aead_keyed(const struct tl_dp_aead *a)
{
	return a->enc_keyed || a->dec_keyed;
}

void tl_dp_aead_free(struct tl_dp_aead *a)
{
	if (!a)
		return;
	if (a->cipher)
		tl_dp_ctx_free(a);
	EVP_CIPHER_free(a->cipher);
	tl_wipe(a, sizeof(*a));
	free(a);
}

int tl_dp_aead_seal(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, uint8_t tag[TL_AEAD_TAG_LEN])
{
	uint8_t nonce[TL_NONCE_LEN];
	OSSL_PARAM params[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	const uint8_t *k;
	size_t outl = 0, finl = 0;

	if (len > INT_MAX || !a->enc)
		return -1;
	tl_nonce_from_counter(nonce, counter);
	k = tl_dp_key_change(a->enc_key, &a->enc_keyed, key);
	if (!a->einit(a->enc, k, k ? TL_KEY_LEN : 0, nonce, sizeof(nonce), NULL)) {
		a->enc_keyed = false;
		return -1;
	}
	if (len && !a->update(a->enc, buf, &outl, len, buf, len))
		return -1;
	if (!a->final(a->enc, buf + outl, &finl, len - outl))
		return -1;
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
						      TL_AEAD_TAG_LEN);
	if (!a->get_params(a->enc, params))
		return -1;
	return 0;
}

/* On failure buf holds unauthenticated bytes: the caller must drop the packet. */
int tl_dp_aead_open(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, const uint8_t tag[TL_AEAD_TAG_LEN])
{
	uint8_t nonce[TL_NONCE_LEN], t[TL_AEAD_TAG_LEN];
	OSSL_PARAM params[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	const uint8_t *k;
	size_t outl = 0, finl = 0;

	if (len > INT_MAX || !a->dec)
		return -1;
	tl_nonce_from_counter(nonce, counter);
	memcpy(t, tag, sizeof(t));
	/* the expected tag goes in with the nonce: the provider sets its parameters after
	 * the nonce, and Final compares against it */
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, t, sizeof(t));
	k = tl_dp_key_change(a->dec_key, &a->dec_keyed, key);
	if (!a->dinit(a->dec, k, k ? TL_KEY_LEN : 0, nonce, sizeof(nonce), params)) {
		a->dec_keyed = false;
		return -1;
	}
	if (len && !a->update(a->dec, buf, &outl, len, buf, len))
		return -1;
	if (!a->final(a->dec, buf + outl, &finl, len - outl))
		return -1;
	return 0;
}
