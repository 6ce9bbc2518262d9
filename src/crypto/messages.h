/* WireGuard wire messages. All multi-byte integers are little-endian on the wire. */
#ifndef TL_MESSAGES_H
#define TL_MESSAGES_H

#include <stdint.h>
#include "crypto/primitives.h"

enum tl_msg_type {
	TL_MSG_INITIATION = 1,
	TL_MSG_RESPONSE = 2,
	TL_MSG_COOKIE = 3,
	TL_MSG_DATA = 4,
};

#define TL_TIMESTAMP_LEN 12
#define TL_COOKIE_LEN 16

struct tl_msg_macs {
	uint8_t mac1[TL_MAC_LEN];
	uint8_t mac2[TL_MAC_LEN];
} __attribute__((packed));

struct tl_msg_initiation {
	uint32_t type;                 /* 1, as a LE 32-bit word (type byte + 3 reserved zeros) */
	uint32_t sender;
	uint8_t ephemeral[TL_KEY_LEN];
	uint8_t static_enc[TL_KEY_LEN + TL_AEAD_TAG_LEN];
	uint8_t timestamp_enc[TL_TIMESTAMP_LEN + TL_AEAD_TAG_LEN];
	struct tl_msg_macs macs;
} __attribute__((packed));

struct tl_msg_response {
	uint32_t type;
	uint32_t sender;
	uint32_t receiver;
	uint8_t ephemeral[TL_KEY_LEN];
	uint8_t empty_enc[TL_AEAD_TAG_LEN];
	struct tl_msg_macs macs;
} __attribute__((packed));

struct tl_msg_cookie {
	uint32_t type;
	uint32_t receiver;
	uint8_t nonce[TL_XNONCE_LEN];
	uint8_t cookie_enc[TL_COOKIE_LEN + TL_AEAD_TAG_LEN];
} __attribute__((packed));

struct tl_msg_data {
	uint32_t type;
	uint32_t receiver;
	uint64_t counter;
	uint8_t payload[];             /* ciphertext || 16-byte tag */
} __attribute__((packed));

_Static_assert(sizeof(struct tl_msg_initiation) == 148, "initiation is 148 bytes");
_Static_assert(sizeof(struct tl_msg_response) == 92, "response is 92 bytes");
_Static_assert(sizeof(struct tl_msg_cookie) == 64, "cookie reply is 64 bytes");
_Static_assert(sizeof(struct tl_msg_data) == 16, "data header is 16 bytes");

#define TL_MSG_DATA_MIN (sizeof(struct tl_msg_data) + TL_AEAD_TAG_LEN)   /* keepalive */
#define TL_PADDING_MULTIPLE 16

#endif
