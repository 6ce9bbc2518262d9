/* Cryptographic primitives of the WireGuard construction, as thin wrappers over libsodium
 * (X25519, XChaCha20-Poly1305, randomness, wiping) and OpenSSL libcrypto (BLAKE2s, keyed
 * BLAKE2s, HMAC-BLAKE2s, data-path ChaCha20-Poly1305). No I/O. */
#ifndef TL_PRIMITIVES_H
#define TL_PRIMITIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_KEY_LEN 32
#define TL_HASH_LEN 32
#define TL_MAC_LEN 16
#define TL_AEAD_TAG_LEN 16
#define TL_XNONCE_LEN 24

/* Once per process, before any other call: sodium_init() and the OpenSSL fetches. */
int tl_crypto_init(void);

/* HASH = BLAKE2s-256 over the concatenation of up to three parts (NULL/0 parts skipped). */
void tl_hash(uint8_t out[TL_HASH_LEN], const void *a, size_t alen, const void *b, size_t blen,
	     const void *c, size_t clen);
/* MAC = keyed BLAKE2s with 16-byte output. */
void tl_mac(uint8_t out[TL_MAC_LEN], const uint8_t *key, size_t keylen, const void *in, size_t len);
/* HMAC-BLAKE2s, 32-byte output. */
void tl_hmac(uint8_t out[TL_HASH_LEN], const uint8_t *key, size_t keylen, const void *in, size_t len);
/* KDF_n(key, input): HKDF over HMAC-BLAKE2s; t2/t3 may be NULL for KDF1/KDF2. */
void tl_kdf(uint8_t t1[TL_HASH_LEN], uint8_t t2[TL_HASH_LEN], uint8_t t3[TL_HASH_LEN],
	    const uint8_t key[TL_HASH_LEN], const void *in, size_t len);

/* X25519. tl_dh returns -1 when the shared secret is all zeros (low-order point). */
void tl_x25519_generate(uint8_t priv[TL_KEY_LEN]);                       /* clamped */
void tl_x25519_public(uint8_t pub[TL_KEY_LEN], const uint8_t priv[TL_KEY_LEN]);
int tl_dh(uint8_t out[TL_KEY_LEN], const uint8_t priv[TL_KEY_LEN], const uint8_t pub[TL_KEY_LEN]);

/* ChaCha20-Poly1305 (RFC 8439), nonce = 4 zero bytes || 64-bit LE counter. out holds
 * len + 16 bytes on seal; open takes the sealed length and returns -1 on a bad tag. */
void tl_aead_seal(uint8_t *out, const uint8_t *in, size_t len, uint64_t counter,
		  const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN]);
int tl_aead_open(uint8_t *out, const uint8_t *in, size_t sealed_len, uint64_t counter,
		 const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN]);
/* XChaCha20-Poly1305 (cookie replies). */
void tl_xaead_seal(uint8_t *out, const uint8_t *in, size_t len, const uint8_t nonce[TL_XNONCE_LEN],
		   const uint8_t *ad, size_t adlen, const uint8_t key[TL_KEY_LEN]);
int tl_xaead_open(uint8_t *out, const uint8_t *in, size_t sealed_len,
		  const uint8_t nonce[TL_XNONCE_LEN], const uint8_t *ad, size_t adlen,
		  const uint8_t key[TL_KEY_LEN]);

void tl_random(void *buf, size_t len);
uint32_t tl_random_u32(void);
void tl_wipe(void *buf, size_t len);
bool tl_equal(const void *a, const void *b, size_t len);   /* constant time */
bool tl_is_zero(const void *a, size_t len);                /* constant time */

/* Data-path AEAD: ChaCha20-Poly1305 in place, no associated data, from OpenSSL's providers
 * (primitives.c says how). One context per thread (not thread-safe); the key is set per
 * call. head and tail: the bytes before buf, and from buf + len on, that the call may use
 * as scratch (it puts their contents back; a tag at buf + len may count in tail); with 64
 * before and up to 63 after (to the end of the last 64-byte block) the message takes the
 * one-pass path, otherwise OpenSSL's AEAD. 0 or -1. */
struct tl_dp_aead;
struct tl_dp_aead *tl_dp_aead_new(void);
void tl_dp_aead_free(struct tl_dp_aead *a);
/* Tests of the callers' failure handling only: a context that was never given its
 * cipher, so that every seal and open on it fails. */
struct tl_dp_aead *tl_dp_aead_new_unusable(void);
int tl_dp_aead_seal(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, uint8_t tag[TL_AEAD_TAG_LEN], size_t head, size_t tail);
int tl_dp_aead_open(struct tl_dp_aead *a, const uint8_t key[TL_KEY_LEN], uint64_t counter,
		    uint8_t *buf, size_t len, const uint8_t tag[TL_AEAD_TAG_LEN], size_t head,
		    size_t tail);
/* The context keeps a copy of the last key and its schedule: forget them (a retired key
 * must not outlive its keypair). 0 or -1. */
int tl_dp_aead_forget(struct tl_dp_aead *a);
/* Whether the context holds a key now (either direction). */
bool tl_dp_aead_keyed(const struct tl_dp_aead *a);

#endif
