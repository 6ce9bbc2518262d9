/* mac1/mac2 and cookie replies (whitepaper §5.4.4, §5.4.7). The responder keeps a random
 * secret, renewed when older than 2 minutes; a cookie is MAC(secret, source ip || port).
 * The sender keeps the last cookie it was given and the mac1 the cookie reply answers. */
#include "crypto/cookie.h"

#include <endian.h>
#include <string.h>

#define TL_MACS_LEN (2 * TL_MAC_LEN)

static bool tl_birth_expired(uint64_t birth_ns, uint64_t max_age_ns, uint64_t now_ns)
{
	return birth_ns == 0 || now_ns < birth_ns || now_ns - birth_ns >= max_age_ns;
}

/* 0 is reserved for "never": a clock reading of exactly 0 is nudged to 1. */
static uint64_t tl_birth_of(uint64_t now_ns)
{
	return now_ns ? now_ns : 1;
}

static const uint8_t *tl_msg_mac1(const void *msg, size_t len)
{
	return (const uint8_t *)msg + len - TL_MACS_LEN;
}

static const uint8_t *tl_msg_mac2(const void *msg, size_t len)
{
	return (const uint8_t *)msg + len - TL_MAC_LEN;
}

/* ---- responder side --------------------------------------------------------------------- */

void tl_cookie_checker_init(struct tl_cookie_checker *c, const struct tl_identity *id)
{
	tl_wipe(c, sizeof(*c));
	c->id = id;
}

static void tl_cookie_secret_refresh(struct tl_cookie_checker *c, uint64_t now_ns)
{
	if (!tl_birth_expired(c->secret_birth_ns, TL_COOKIE_SECRET_MAX_AGE_NS, now_ns))
		return;
	tl_random(c->secret, sizeof(c->secret));
	c->secret_birth_ns = tl_birth_of(now_ns);
}

/* cookie = MAC(secret, src ip || src port (network order)) */
static void tl_cookie_make(uint8_t cookie[TL_COOKIE_LEN], struct tl_cookie_checker *c,
			   const uint8_t *src_ip, size_t ip_len, uint16_t src_port, uint64_t now_ns)
{
	uint8_t buf[16 + sizeof(uint16_t)];
	uint16_t port = htobe16(src_port);

	tl_cookie_secret_refresh(c, now_ns);
	if (ip_len > 16)
		ip_len = 16;
	memcpy(buf, src_ip, ip_len);
	memcpy(buf + ip_len, &port, sizeof(port));
	tl_mac(cookie, c->secret, sizeof(c->secret), buf, ip_len + sizeof(port));
}

enum tl_mac_state tl_cookie_validate(struct tl_cookie_checker *c, const void *msg, size_t len,
				     const uint8_t *src_ip, size_t ip_len, uint16_t src_port,
				     uint64_t now_ns)
{
	uint8_t mac[TL_MAC_LEN], cookie[TL_COOKIE_LEN];
	enum tl_mac_state state = TL_MAC_INVALID;

	if (!c->id || !c->id->has_key || len < TL_MACS_LEN)
		return TL_MAC_INVALID;
	tl_mac(mac, c->id->mac1_key, TL_HASH_LEN, msg, len - TL_MACS_LEN);
	if (!tl_equal(mac, tl_msg_mac1(msg, len), TL_MAC_LEN))
		goto out;
	state = TL_MAC_VALID_MAC1;
	if (tl_is_zero(tl_msg_mac2(msg, len), TL_MAC_LEN))
		goto out;
	tl_cookie_make(cookie, c, src_ip, ip_len, src_port, now_ns);
	tl_mac(mac, cookie, TL_COOKIE_LEN, msg, len - TL_MAC_LEN);
	if (tl_equal(mac, tl_msg_mac2(msg, len), TL_MAC_LEN))
		state = TL_MAC_VALID_COOKIE;
out:
	tl_wipe(cookie, sizeof(cookie));
	tl_wipe(mac, sizeof(mac));
	return state;
}

/* reply = type 3, receiver, nonce, XAEAD(HASH("cookie--" || our pub), cookie, AD = mac1) */
void tl_cookie_create_reply(struct tl_msg_cookie *out, struct tl_cookie_checker *c,
			    const void *msg, size_t len, uint32_t sender_index,
			    const uint8_t *src_ip, size_t ip_len, uint16_t src_port, uint64_t now_ns)
{
	uint8_t cookie[TL_COOKIE_LEN];

	memset(out, 0, sizeof(*out));
	if (!c->id || len < TL_MACS_LEN)
		return;
	out->type = htole32(TL_MSG_COOKIE);
	out->receiver = sender_index;
	tl_random(out->nonce, sizeof(out->nonce));
	tl_cookie_make(cookie, c, src_ip, ip_len, src_port, now_ns);
	tl_xaead_seal(out->cookie_enc, cookie, TL_COOKIE_LEN, out->nonce, tl_msg_mac1(msg, len),
		      TL_MAC_LEN, c->id->cookie_key);
	tl_wipe(cookie, sizeof(cookie));
}

/* ---- sender side ------------------------------------------------------------------------ */

static bool tl_cookie_is_fresh(const struct tl_handshake *hs, uint64_t now_ns)
{
	return !tl_birth_expired(hs->cookie_birth_ns,
				 TL_COOKIE_SECRET_MAX_AGE_NS - TL_COOKIE_SECRET_LATENCY_NS, now_ns);
}

void tl_cookie_add_macs(void *msg, size_t len, struct tl_handshake *hs, uint64_t now_ns)
{
	uint8_t *mac1, *mac2;

	if (len < TL_MACS_LEN)
		return;
	mac1 = (uint8_t *)msg + len - TL_MACS_LEN;
	mac2 = mac1 + TL_MAC_LEN;
	tl_mac(mac1, hs->remote_mac1_key, TL_HASH_LEN, msg, len - TL_MACS_LEN);
	memcpy(hs->last_mac1_sent, mac1, TL_MAC_LEN);
	hs->have_sent_mac1 = true;
	if (tl_cookie_is_fresh(hs, now_ns))
		tl_mac(mac2, hs->cookie, TL_COOKIE_LEN, msg, len - TL_MAC_LEN);
	else
		memset(mac2, 0, TL_MAC_LEN);
}

int tl_cookie_consume_reply(const struct tl_msg_cookie *m, struct tl_handshake *hs, uint64_t now_ns)
{
	uint8_t cookie[TL_COOKIE_LEN];

	if (m->type != htole32(TL_MSG_COOKIE) || !hs->have_sent_mac1)
		return -1;
	if (tl_xaead_open(cookie, m->cookie_enc, sizeof(m->cookie_enc), m->nonce,
			  hs->last_mac1_sent, TL_MAC_LEN, hs->remote_cookie_key)) {
		tl_wipe(cookie, sizeof(cookie));
		return -1;
	}
	memcpy(hs->cookie, cookie, TL_COOKIE_LEN);
	hs->cookie_birth_ns = tl_birth_of(now_ns);
	hs->have_sent_mac1 = false;   /* one cookie per mac1 sent */
	tl_wipe(cookie, sizeof(cookie));
	return 0;
}
