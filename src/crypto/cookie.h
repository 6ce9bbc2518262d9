/* mac1/mac2 and cookies (WireGuard §5.4.4, §5.4.7): the responder side checker with its
 * rotating secret, and the sender side (adding macs, consuming cookie replies). */
#ifndef TL_COOKIE_H
#define TL_COOKIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "crypto/noise.h"

#define TL_COOKIE_SECRET_MAX_AGE_NS (120ull * 1000000000ull)
#define TL_COOKIE_SECRET_LATENCY_NS (5ull * 1000000000ull)

struct tl_cookie_checker {
	uint8_t secret[TL_HASH_LEN];
	uint64_t secret_birth_ns;         /* 0 = never generated */
	const struct tl_identity *id;
};

enum tl_mac_state {
	TL_MAC_INVALID,        /* mac1 wrong: drop */
	TL_MAC_VALID_MAC1,     /* mac1 right, mac2 missing or wrong */
	TL_MAC_VALID_COOKIE,   /* mac1 and mac2 right */
};

void tl_cookie_checker_init(struct tl_cookie_checker *c, const struct tl_identity *id);

/* msg is a whole initiation or response (len = its size; macs are the last 32 bytes).
 * src_ip is 4 or 16 bytes, src_port host order. */
enum tl_mac_state tl_cookie_validate(struct tl_cookie_checker *c, const void *msg, size_t len,
				     const uint8_t *src_ip, size_t ip_len, uint16_t src_port,
				     uint64_t now_ns);

/* Reply to msg (under load, mac1 valid, mac2 not) with a cookie for this source. */
void tl_cookie_create_reply(struct tl_msg_cookie *out, struct tl_cookie_checker *c,
			    const void *msg, size_t len, uint32_t sender_index,
			    const uint8_t *src_ip, size_t ip_len, uint16_t src_port, uint64_t now_ns);

/* Sender side: fills mac1 (and mac2 when hs holds a cookie younger than 120 s - 5 s) of an
 * outgoing initiation or response, and remembers mac1 for a cookie reply. */
void tl_cookie_add_macs(void *msg, size_t len, struct tl_handshake *hs, uint64_t now_ns);

/* Sender side: decrypts a cookie reply addressed to hs (AD = our last mac1). 0 or -1. */
int tl_cookie_consume_reply(const struct tl_msg_cookie *m, struct tl_handshake *hs, uint64_t now_ns);

#endif
