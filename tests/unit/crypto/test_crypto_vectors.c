/* Published vectors for the primitives: RFC 8439 (ChaCha20-Poly1305), RFC 7693 and the
 * BLAKE2 keyed known answers (BLAKE2s, keyed BLAKE2s), RFC 2104 (HMAC-BLAKE2s against a
 * naive construction), RFC 7748 (X25519); agreement of the handshake AEAD (libsodium) and
 * the data-path AEAD (OpenSSL) on random inputs; XChaCha20-Poly1305 round trip. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "crypto/primitives.h"
#include "crypto_check.h"

/* ---- RFC 8439 §2.8.2 ------------------------------------------------------------------ */

static const char rfc8439_plain[] =
	"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
	"future, sunscreen would be it.";
static const char rfc8439_cipher_hex[] =
	"d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
	"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
	"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
	"3ff4def08e4b7a9de576d26586cec64b6116";
static const char rfc8439_tag_hex[] = "1ae10b594f09e26a7e902ecbd0600691";

struct rfc8439 {
	uint8_t key[32], nonce[12], aad[12], cipher[114], tag[16];
};

static void rfc8439_load(struct rfc8439 *v)
{
	for (int i = 0; i < 32; i++)
		v->key[i] = (uint8_t)(0x80 + i);
	tl_hex(v->nonce, "070000004041424344454647");
	tl_hex(v->aad, "50515253c0c1c2c3c4c5c6c7");
	tl_hex(v->cipher, rfc8439_cipher_hex);
	tl_hex(v->tag, rfc8439_tag_hex);
}

/* The RFC nonce is not 4 zero bytes || counter, so both libraries are driven directly. */
static void test_rfc8439_sodium(const struct rfc8439 *v)
{
	uint8_t out[114 + 16], back[114];
	unsigned long long outlen = 0;

	crypto_aead_chacha20poly1305_ietf_encrypt(out, &outlen, (const uint8_t *)rfc8439_plain, 114,
						  v->aad, 12, NULL, v->nonce, v->key);
	CHECK(outlen == 130);
	CHECK_MEM(out, v->cipher, 114);
	CHECK_MEM(out + 114, v->tag, 16);
	CHECK(crypto_aead_chacha20poly1305_ietf_decrypt(back, NULL, NULL, out, 130, v->aad, 12,
							v->nonce, v->key) == 0);
	CHECK_MEM(back, rfc8439_plain, 114);
	out[129] ^= 1;
	CHECK(crypto_aead_chacha20poly1305_ietf_decrypt(back, NULL, NULL, out, 130, v->aad, 12,
							v->nonce, v->key) != 0);
}

static void test_rfc8439_evp(const struct rfc8439 *v)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	uint8_t buf[114], tag[16];
	int l = 0;

	memcpy(buf, rfc8439_plain, 114);
	CHECK(EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, v->key, v->nonce) == 1);
	CHECK(EVP_EncryptUpdate(ctx, NULL, &l, v->aad, 12) == 1);
	CHECK(EVP_EncryptUpdate(ctx, buf, &l, buf, 114) == 1);
	CHECK(EVP_EncryptFinal_ex(ctx, buf + l, &l) == 1);
	CHECK(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1);
	CHECK_MEM(buf, v->cipher, 114);
	CHECK_MEM(tag, v->tag, 16);
	EVP_CIPHER_CTX_free(ctx);
}

/* ---- handshake AEAD vs data-path AEAD ------------------------------------------------- */

enum { ROOM = 64, MAXLEN = 2000 };

/* A message at buf with the tag behind it, in a region with head bytes before buf and tail
 * bytes after the message (the tag counts in them). */
struct dp_case {
	uint8_t *region, *before, *buf;
	size_t len, head, tail, size;
};

static void dp_case_set(struct dp_case *c, unsigned long long *seed, size_t len, size_t head,
			size_t tail)
{
	c->len = len;
	c->head = head;
	c->tail = tail;
	c->size = head + len + tail;
	c->buf = c->region + head;
	tl_test_fill(seed, c->region, c->size);
	memcpy(c->before, c->region, c->size);
}

/* The bytes outside the message and its tag are what they were before the call. */
static bool dp_room_kept(const struct dp_case *c)
{
	size_t end = c->head + c->len + TL_AEAD_TAG_LEN;

	return memcmp(c->region, c->before, c->head) == 0 &&
	       memcmp(c->region + end, c->before + end, c->size - end) == 0;
}

/* Seals with the data path (tag at buf + len), checks against libsodium's sealed, opens it
 * again; a flipped tag bit and the wrong counter fail, and the room is kept throughout.
 * one_pass: whether the case has the one-pass path's room, which keeps the ciphertext in
 * the buffer when the tag does not verify (the whole path leaves unauthenticated bytes). */
static bool dp_round_trip(struct tl_dp_aead *dp, struct dp_case *c, const uint8_t key[32],
			  uint64_t counter, const uint8_t *plain, const uint8_t *sealed, bool one_pass,
			  unsigned i)
{
	size_t len = c->len;
	uint8_t *tag = c->buf + len;
	bool good = true;

	memcpy(c->buf, plain, len);
	good &= tl_dp_aead_seal(dp, key, counter, c->buf, len, tag, c->head, c->tail) == 0;
	good &= memcmp(c->buf, sealed, len) == 0 && memcmp(tag, sealed + len, 16) == 0;
	good &= dp_room_kept(c);
	good &= tl_dp_aead_open(dp, key, counter, c->buf, len, tag, c->head, c->tail) == 0;
	good &= memcmp(c->buf, plain, len) == 0 && dp_room_kept(c);
	memcpy(c->buf, sealed, len + 16);
	tag[i % 16] ^= (uint8_t)(1u << (i % 8));
	good &= tl_dp_aead_open(dp, key, counter, c->buf, len, tag, c->head, c->tail) != 0;
	if (one_pass)
		good &= memcmp(c->buf, sealed, len) == 0;
	else if (len >= 16)   /* bytes the keystream changed (all 16 the same: 2^-128) */
		good &= memcmp(c->buf, sealed, len) != 0;
	tag[i % 16] ^= (uint8_t)(1u << (i % 8));
	memcpy(c->buf, sealed, len);
	good &= tl_dp_aead_open(dp, key, counter + 1, c->buf, len, tag, c->head, c->tail) != 0;
	good &= dp_room_kept(c);
	return good;
}

/* Both paths of the data-path AEAD (the one-pass path with room around the message, OpenSSL's
 * AEAD without) against libsodium's, on every length to 2000, with keys that change, repeat
 * and come back, as with several peers in one burst; the room at its least (64 bytes before,
 * the rest of the last 64-byte block after) and one byte short of it. */
static void test_aead_agreement(void)
{
	struct tl_dp_aead *dp = tl_dp_aead_new();
	uint8_t *plain = malloc(MAXLEN), *sealed = malloc(MAXLEN + 16), *buf = malloc(MAXLEN);
	uint8_t key[32], key_b[32] = { 7 }, tag[16];
	struct dp_case c = { .region = malloc(4 * ROOM + MAXLEN), .before = malloc(4 * ROOM + MAXLEN) };
	unsigned long long seed = 0x7475e1e55ull;
	unsigned ok = 0, runs = 2 * (MAXLEN + 1);

	CHECK(dp != NULL);
	for (unsigned i = 0; i < runs; i++) {
		size_t len = i % (MAXLEN + 1), slack = (64 - len % 64) % 64;
		uint64_t counter = i % 3 ? tl_test_rand(&seed) : i;
		size_t tail = TL_AEAD_TAG_LEN > slack ? TL_AEAD_TAG_LEN : slack;
		bool good = true;

		if (i % 3 == 0)
			tl_test_fill(&seed, key, sizeof(key));
		else if (i % 7 == 0)
			memcpy(key, key_b, sizeof(key));
		if (i % 11 == 0)
			memcpy(key_b, key, sizeof(key));
		tl_test_fill(&seed, plain, len);
		tl_aead_seal(sealed, plain, len, counter, NULL, 0, key);
		/* the one-pass path: the least room, and a varied amount more */
		dp_case_set(&c, &seed, len, ROOM + (i % 5 == 0 ? i % 64 : 0), tail + (i % 4 ? 0 : i % ROOM));
		good &= dp_round_trip(dp, &c, key, counter, plain, sealed, true, i);
		/* the whole path: a byte short before, or (where the block has slack beyond the
		 * tag) after */
		if (i % 2 || slack <= TL_AEAD_TAG_LEN)
			dp_case_set(&c, &seed, len, ROOM - 1, tail + ROOM);
		else
			dp_case_set(&c, &seed, len, ROOM, slack - 1);
		good &= dp_round_trip(dp, &c, key, counter, plain, sealed, false, i);
		/* a tag apart from the message, no room at all */
		memcpy(buf, plain, len);
		good &= tl_dp_aead_seal(dp, key, counter, buf, len, tag, 0, 0) == 0;
		good &= memcmp(buf, sealed, len) == 0 && memcmp(tag, sealed + len, 16) == 0;
		good &= tl_aead_open(buf, sealed, len + 16, counter, NULL, 0, key) == 0;
		good &= memcmp(buf, plain, len) == 0;
		sealed[len + i % 16] ^= 0x80;
		good &= tl_aead_open(buf, sealed, len + 16, counter, NULL, 0, key) != 0;
		if (len) {
			sealed[len + i % 16] ^= 0x80;
			sealed[i % len] ^= 1;
			good &= tl_aead_open(buf, sealed, len + 16, counter, NULL, 0, key) != 0;
		}
		if (!good)
			fprintf(stderr, "# data-path AEAD disagrees at length %zu (run %u)\n", len, i);
		ok += (unsigned)good;
	}
	CHECK(ok == runs);
	CHECK(tl_aead_open(buf, sealed, 15, 0, NULL, 0, key) != 0);
	/* forgetting drops the keys: the next seal and open (either path) key the context
	 * again and still agree with the handshake AEAD */
	CHECK(tl_dp_aead_keyed(dp));
	CHECK(tl_dp_aead_forget(dp) == 0);
	CHECK(!tl_dp_aead_keyed(dp));
	tl_test_fill(&seed, plain, 100);
	tl_aead_seal(sealed, plain, 100, 9, NULL, 0, key);
	memcpy(buf, plain, 100);
	CHECK(tl_dp_aead_seal(dp, key, 9, buf, 100, tag, 0, 0) == 0);
	CHECK_MEM(buf, sealed, 100);
	CHECK_MEM(tag, sealed + 100, 16);
	CHECK(tl_dp_aead_forget(dp) == 0);
	CHECK(tl_dp_aead_open(dp, key, 9, buf, 100, tag, 0, 0) == 0);
	CHECK_MEM(buf, plain, 100);
	CHECK(tl_dp_aead_forget(dp) == 0);
	dp_case_set(&c, &seed, 100, ROOM, 28);
	CHECK(dp_round_trip(dp, &c, key, 9, plain, sealed, true, 3));
	CHECK(tl_dp_aead_keyed(dp));
	CHECK(tl_dp_aead_forget(dp) == 0);
	CHECK(!tl_dp_aead_keyed(dp));
	tl_dp_aead_free(dp);
	/* a context without its cipher fails every call, and forgetting on it is harmless */
	dp = tl_dp_aead_new_unusable();
	CHECK(dp != NULL);
	CHECK(tl_dp_aead_seal(dp, key, 9, buf, 100, tag, 0, 0) != 0);
	CHECK(tl_dp_aead_open(dp, key, 9, buf, 100, tag, 0, 0) != 0);
	CHECK(tl_dp_aead_seal(dp, key, 9, c.buf, 100, c.buf + 100, c.head, c.tail) != 0);
	CHECK(tl_dp_aead_open(dp, key, 9, c.buf, 100, c.buf + 100, c.head, c.tail) != 0);
	CHECK(tl_dp_aead_forget(dp) == 0);
	tl_dp_aead_free(dp);
	free(plain);
	free(sealed);
	free(buf);
	free(c.region);
	free(c.before);
}

/* tl_aead with associated data agrees with libsodium called with the WireGuard nonce. */
static void test_aead_nonce_layout(void)
{
	uint8_t key[32], ad[32], plain[60], a[76], b[76], nonce[12] = { 0 };
	uint64_t counter = 0x0102030405060708ull;

	memset(key, 0x42, sizeof(key));
	memset(ad, 0x17, sizeof(ad));
	memset(plain, 0x99, sizeof(plain));
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(counter >> (8 * i));
	tl_aead_seal(a, plain, sizeof(plain), counter, ad, sizeof(ad), key);
	crypto_aead_chacha20poly1305_ietf_encrypt(b, NULL, plain, sizeof(plain), ad, sizeof(ad),
						  NULL, nonce, key);
	CHECK_MEM(a, b, sizeof(a));
	CHECK(tl_aead_open(b, a, sizeof(a), counter, ad, sizeof(ad), key) == 0);
	CHECK_MEM(b, plain, sizeof(plain));
	ad[0] ^= 1;
	CHECK(tl_aead_open(b, a, sizeof(a), counter, ad, sizeof(ad), key) != 0);
}

/* ---- BLAKE2s ---------------------------------------------------------------------------- */

static void test_blake2s(void)
{
	uint8_t out[32], want[32];

	tl_hex(want, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
	tl_hash(out, "abc", 3, NULL, 0, NULL, 0);
	CHECK_MEM(out, want, 32);
	tl_hash(out, "a", 1, "b", 1, "c", 1);   /* parts concatenate */
	CHECK_MEM(out, want, 32);
	tl_hash(out, NULL, 0, "ab", 2, "c", 1);
	CHECK_MEM(out, want, 32);
}

/* blake2s-kat keyed entries (key 00..1f, input 00..n-1, 32-byte output), through the same
 * OpenSSL BLAKE2SMAC that tl_mac uses, at full output size. */
static void blake2s_keyed32(uint8_t out[32], const uint8_t *key, const uint8_t *in, size_t len)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "BLAKE2SMAC", NULL);
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	size_t size = 32, outl = 0;
	OSSL_PARAM params[] = { OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_END };

	CHECK(EVP_MAC_init(ctx, key, 32, params) == 1);
	if (len)
		EVP_MAC_update(ctx, in, len);
	CHECK(EVP_MAC_final(ctx, out, &outl, 32) == 1 && outl == 32);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
}

static void test_blake2s_keyed(void)
{
	static const struct { size_t n; const char *hex; } kat[] = {
		{ 0, "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49" },
		{ 1, "40d15fee7c328830166ac3f918650f807e7e01e177258cdc0a39b11f598066f1" },
		{ 2, "6bb71300644cd3991b26ccd4d274acd1adeab8b1d7914546c1198bbe9fc9d803" },
		{ 3, "1d220dbe2ee134661fdf6d9e74b41704710556f2f6e5a091b227697445dbea6b" },
		{ 64, "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4" },
		{ 65, "21fe0ceb0052be7fb0f004187cacd7de67fa6eb0938d927677f2398c132317a8" },
		{ 255, "3fb735061abc519dfe979e54c1ee5bfad0a9d858b3315bad34bde999efd724dd" },
	};
	/* 16-byte keyed BLAKE2s (the WireGuard MAC), same key and inputs */
	static const struct { size_t n; const char *hex; } mac16[] = {
		{ 0, "9536f9b267655743dee97b8a670f9f53" },
		{ 3, "1e2a79436a7796a3e9826bfedf07659f" },
		{ 64, "f1efa90d2547036841ecd3627fafbc36" },
		{ 100, "0b67d33f8b859c3157fbabd9e6e47ed0" },
	};
	uint8_t key[32], in[256], out[32], want[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		tl_hex(want, kat[i].hex);
		blake2s_keyed32(out, key, in, kat[i].n);
		CHECK_MEM(out, want, 32);
	}
	for (size_t i = 0; i < sizeof(mac16) / sizeof(mac16[0]); i++) {
		tl_hex(want, mac16[i].hex);
		tl_mac(out, key, 32, in, mac16[i].n);
		CHECK_MEM(out, want, 16);
	}
}

/* ---- HMAC-BLAKE2s against RFC 2104 built from tl_hash ----------------------------------- */

static void naive_hmac(uint8_t out[32], const uint8_t *key, size_t keylen, const uint8_t *in,
		       size_t len)
{
	uint8_t k[64] = { 0 }, ipad[64], opad[64], inner[32];

	if (keylen > 64)
		tl_hash(k, key, keylen, NULL, 0, NULL, 0);
	else
		memcpy(k, key, keylen);
	for (int i = 0; i < 64; i++) {
		ipad[i] = k[i] ^ 0x36;
		opad[i] = k[i] ^ 0x5c;
	}
	tl_hash(inner, ipad, 64, in, len, NULL, 0);
	tl_hash(out, opad, 64, inner, 32, NULL, 0);
}

static void test_hmac(void)
{
	static const size_t keylens[] = { 0, 1, 16, 32, 63, 64, 65, 100 };
	static const size_t lens[] = { 0, 1, 33, 64, 65, 1000 };
	uint8_t key[100], in[1000], a[32], b[32];
	unsigned long long seed = 0x4d4143ull;
	unsigned same = 0, total = 0;

	tl_test_fill(&seed, key, sizeof(key));
	tl_test_fill(&seed, in, sizeof(in));
	for (size_t i = 0; i < sizeof(keylens) / sizeof(keylens[0]); i++) {
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			tl_hmac(a, key, keylens[i], in, lens[j]);
			naive_hmac(b, key, keylens[i], in, lens[j]);
			same += memcmp(a, b, 32) == 0;
			total++;
		}
	}
	CHECK(same == total);
}

/* ---- X25519 (RFC 7748) ----------------------------------------------------------------- */

static void check_x25519(const char *scalar, const char *u, const char *result)
{
	uint8_t k[32], p[32], want[32], out[32];

	tl_hex(k, scalar);
	tl_hex(p, u);
	tl_hex(want, result);
	CHECK(tl_dh(out, k, p) == 0);
	CHECK_MEM(out, want, 32);
}

static void test_x25519(void)
{
	uint8_t a[32], b[32], apub[32], bpub[32], want[32], s1[32], s2[32], low[32] = { 0 };

	/* §5.2 */
	check_x25519("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
		     "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
		     "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
	check_x25519("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
		     "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
		     "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");
	/* §6.1 */
	tl_hex(a, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
	tl_hex(b, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
	tl_x25519_public(apub, a);
	tl_x25519_public(bpub, b);
	tl_hex(want, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	CHECK_MEM(apub, want, 32);
	tl_hex(want, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	CHECK_MEM(bpub, want, 32);
	tl_hex(want, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
	CHECK(tl_dh(s1, a, bpub) == 0 && tl_dh(s2, b, apub) == 0);
	CHECK_MEM(s1, want, 32);
	CHECK_MEM(s2, want, 32);

	/* low-order points: 0, 1, and the order-8 point of RFC 7748 §6.1's discussion */
	memset(s1, 0xaa, sizeof(s1));
	CHECK(tl_dh(s1, a, low) == -1);
	CHECK(tl_is_zero(s1, 32));
	low[0] = 1;
	CHECK(tl_dh(s1, a, low) == -1);
	tl_hex(low, "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800");
	CHECK(tl_dh(s1, a, low) == -1);

	/* generated keys are clamped and agree */
	tl_x25519_generate(a);
	tl_x25519_generate(b);
	CHECK((a[0] & 7) == 0 && (a[31] & 0xc0) == 0x40);
	tl_x25519_public(apub, a);
	tl_x25519_public(bpub, b);
	CHECK(tl_dh(s1, a, bpub) == 0 && tl_dh(s2, b, apub) == 0);
	CHECK_MEM(s1, s2, 32);
}

/* ---- XChaCha20-Poly1305 and helpers ------------------------------------------------------ */

static void test_xaead(void)
{
	uint8_t key[32], nonce[24], ad[16], plain[16], sealed[32], back[16];

	tl_random(key, sizeof(key));
	tl_random(nonce, sizeof(nonce));
	tl_random(ad, sizeof(ad));
	tl_random(plain, sizeof(plain));
	tl_xaead_seal(sealed, plain, 16, nonce, ad, 16, key);
	CHECK(tl_xaead_open(back, sealed, 32, nonce, ad, 16, key) == 0);
	CHECK_MEM(back, plain, 16);
	for (int i = 0; i < 32; i++) {
		sealed[i] ^= 4;
		CHECK(tl_xaead_open(back, sealed, 32, nonce, ad, 16, key) != 0);
		sealed[i] ^= 4;
	}
	nonce[23] ^= 1;
	CHECK(tl_xaead_open(back, sealed, 32, nonce, ad, 16, key) != 0);
	nonce[23] ^= 1;
	ad[0] ^= 1;
	CHECK(tl_xaead_open(back, sealed, 32, nonce, ad, 16, key) != 0);
	CHECK(tl_xaead_open(back, sealed, 15, nonce, ad, 16, key) != 0);
}

static void test_helpers(void)
{
	uint8_t a[40] = { 0 }, b[40] = { 0 };

	CHECK(tl_is_zero(a, sizeof(a)));
	CHECK(tl_equal(a, b, sizeof(a)));
	b[39] = 1;
	CHECK(!tl_equal(a, b, sizeof(a)));
	CHECK(!tl_is_zero(b, sizeof(b)));
	tl_wipe(b, sizeof(b));
	CHECK(tl_is_zero(b, sizeof(b)));
	tl_random(a, sizeof(a));
	CHECK(!tl_is_zero(a, sizeof(a)));
}

int main(void)
{
	struct rfc8439 v;

	if (tl_crypto_init() != 0) {
		fprintf(stderr, "tl_crypto_init failed\n");
		return 1;
	}
	CHECK(tl_crypto_init() == 0);   /* idempotent */
	rfc8439_load(&v);
	test_rfc8439_sodium(&v);
	test_rfc8439_evp(&v);
	test_aead_agreement();
	test_aead_nonce_layout();
	test_blake2s();
	test_blake2s_keyed();
	test_hmac();
	test_x25519();
	test_xaead();
	test_helpers();
	return tl_checks_report();
}
