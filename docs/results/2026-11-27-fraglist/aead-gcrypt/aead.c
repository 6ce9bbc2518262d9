/* One core sealing 1420-byte messages in place, a nonce per message (the counter in its last
 * 8 bytes, as a WireGuard data message), with libgcrypt's ChaCha20-Poly1305 and with OpenSSL's
 * through EVP, in one run; the two must agree on every ciphertext and tag of a first pass.
 *   cc -O2 -o aead aead.c -lgcrypt -lcrypto && ./aead */
#include <gcrypt.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LEN 1420
#define N 2000000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nonce_of(uint8_t nonce[12], uint64_t i)
{
	memset(nonce, 0, 4);
	memcpy(nonce + 4, &i, 8);   /* little-endian machine */
}

static void seal_gcry(gcry_cipher_hd_t h, uint64_t i, uint8_t *buf, uint8_t tag[16])
{
	uint8_t nonce[12];

	nonce_of(nonce, i);
	if (gcry_cipher_setiv(h, nonce, 12) || gcry_cipher_final(h) || gcry_cipher_encrypt(h, buf, LEN, NULL, 0) ||
	    gcry_cipher_gettag(h, tag, 16))
		fprintf(stderr, "gcrypt failed\n");
}

static void seal_ossl(EVP_CIPHER_CTX *c, uint64_t i, uint8_t *buf, uint8_t tag[16])
{
	uint8_t nonce[12];
	int outl;

	nonce_of(nonce, i);
	if (!EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) || !EVP_EncryptUpdate(c, buf, &outl, buf, LEN) ||
	    !EVP_EncryptFinal_ex(c, buf + outl, &outl) || !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag))
		fprintf(stderr, "openssl failed\n");
}

int main(void)
{
	static uint8_t a[LEN], b[LEN];
	uint8_t key[32] = { 1 }, ta[16], tb[16];
	gcry_cipher_hd_t h;
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	unsigned same = 0;
	double t;

	if (!gcry_check_version(NULL) || gcry_cipher_open(&h, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0) ||
	    gcry_cipher_setkey(h, key, 32) || !EVP_EncryptInit_ex(c, EVP_chacha20_poly1305(), NULL, key, NULL))
		return 1;
	for (uint64_t i = 0; i < 1000; i++) {
		memset(a, (int)i, LEN);
		memset(b, (int)i, LEN);
		seal_gcry(h, i, a, ta);
		seal_ossl(c, i, b, tb);
		same += !memcmp(a, b, LEN) && !memcmp(ta, tb, 16);
	}
	printf("libgcrypt %s and OpenSSL %s agree on %u of 1000 messages\n", gcry_check_version(NULL),
	       OpenSSL_version(OPENSSL_VERSION), same);
	for (int round = 0; round < 3; round++) {
		t = now();
		for (uint64_t i = 0; i < N; i++)
			seal_gcry(h, i, a, ta);
		t = now() - t;
		printf("libgcrypt seal %d B: %.2f Gbit/s (%.0f ns/packet)\n", LEN, 8.0 * N * LEN / t / 1e9, t / N * 1e9);
		t = now();
		for (uint64_t i = 0; i < N; i++)
			seal_ossl(c, i, b, tb);
		t = now() - t;
		printf("OpenSSL EVP seal %d B: %.2f Gbit/s (%.0f ns/packet)\n", LEN, 8.0 * N * LEN / t / 1e9, t / N * 1e9);
	}
	gcry_cipher_close(h);
	EVP_CIPHER_CTX_free(c);
	return same == 1000 ? 0 : 1;
}
