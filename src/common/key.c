/* Keys as text: standard base64 (configuration, control API, `wg`) and hex (the UAPI). */
#include "common/key.h"

#include <string.h>

#include <sodium.h>

int tl_key_from_base64(uint8_t key[TL_KEY_LEN], const char *b64)
{
	uint8_t tmp[TL_KEY_LEN + 1];
	size_t len, binlen = 0;
	const char *end = NULL;
	int rc = -1;

	if (!b64)
		return -1;
	len = strlen(b64);
	if (len == 44 && sodium_base642bin(tmp, sizeof(tmp), b64, len, NULL, &binlen, &end,
					   sodium_base64_VARIANT_ORIGINAL) == 0 &&
	    end == b64 + len && binlen == TL_KEY_LEN) {
		memcpy(key, tmp, TL_KEY_LEN);
		rc = 0;
	}
	sodium_memzero(tmp, sizeof(tmp));
	return rc;
}

int tl_key_from_hex(uint8_t key[TL_KEY_LEN], const char *hex)
{
	uint8_t tmp[TL_KEY_LEN];
	size_t binlen = 0;
	const char *end = NULL;
	int rc = -1;

	if (!hex || strlen(hex) != 2 * TL_KEY_LEN)
		return -1;
	if (sodium_hex2bin(tmp, sizeof(tmp), hex, 2 * TL_KEY_LEN, NULL, &binlen, &end) == 0 &&
	    end == hex + 2 * TL_KEY_LEN && binlen == TL_KEY_LEN) {
		memcpy(key, tmp, TL_KEY_LEN);
		rc = 0;
	}
	sodium_memzero(tmp, sizeof(tmp));
	return rc;
}

void tl_key_to_base64(char out[45], const uint8_t key[TL_KEY_LEN])
{
	sodium_bin2base64(out, 45, key, TL_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
}

void tl_key_to_hex(char out[65], const uint8_t key[TL_KEY_LEN])
{
	sodium_bin2hex(out, 65, key, TL_KEY_LEN);
}
