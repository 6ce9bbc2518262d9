/* Keys as text. A key is TL_KEY_LEN (32) bytes, the length the crypto room defines. */
#ifndef TL_COMMON_KEY_H
#define TL_COMMON_KEY_H

#include <stdint.h>

#include "crypto/primitives.h"

/* Return 0, or -1 for anything but exactly one key (44 base64 characters with padding, 64
 * hex digits). Intermediate copies are wiped. */
int tl_key_from_base64(uint8_t key[TL_KEY_LEN], const char *b64);
int tl_key_from_hex(uint8_t key[TL_KEY_LEN], const char *hex);
void tl_key_to_base64(char out[45], const uint8_t key[TL_KEY_LEN]);
void tl_key_to_hex(char out[65], const uint8_t key[TL_KEY_LEN]);

#endif
