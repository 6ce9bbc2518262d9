/* libFuzzer harness: arbitrary bytes as initiation, response and cookie reply (read in one
 * pass, or in the control plane's two) for a fixed pair of identities. The first input byte
 * picks the message kind; the rest is the message, truncated or zero-padded to its size.
 * Must never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/cookie.h"
#include "crypto/noise.h"

struct fuzz_state {
	struct tl_identity id_local, id_remote;
	struct tl_handshake hs;
	struct tl_cookie_checker chk;
};

static struct tl_handshake *fuzz_lookup_static(void *arg, const uint8_t key[TL_KEY_LEN])
{
	struct fuzz_state *s = arg;

	return memcmp(key, s->hs.remote_static, TL_KEY_LEN) == 0 ? &s->hs : NULL;
}

static struct tl_handshake *fuzz_lookup_index(void *arg, uint32_t index)
{
	struct fuzz_state *s = arg;

	return index == s->hs.local_index ? &s->hs : NULL;
}

static void fuzz_setup(struct fuzz_state *s)
{
	uint8_t priv[TL_KEY_LEN];

	memset(s, 0, sizeof(*s));
	memset(priv, 0x11, sizeof(priv));
	tl_identity_set(&s->id_local, priv);
	memset(priv, 0x22, sizeof(priv));
	tl_identity_set(&s->id_remote, priv);
	tl_handshake_init(&s->hs, &s->id_local, s->id_remote.pub, NULL);
	tl_cookie_checker_init(&s->chk, &s->id_local);
}

/* Puts hs in the state where a response to us is expected. */
static void fuzz_expect_response(struct fuzz_state *s)
{
	struct tl_msg_initiation m;
	uint8_t ts[TL_TIMESTAMP_LEN] = { 0x40 };

	tl_noise_create_initiation(&m, &s->hs, &s->id_local, 0x01020304, ts, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_state s;
	static const uint8_t ip[4] = { 192, 0, 2, 1 };
	union {
		struct tl_msg_initiation init;
		struct tl_msg_response resp;
		struct tl_msg_cookie cookie;
		uint8_t raw[sizeof(struct tl_msg_initiation)];
	} m;
	struct tl_handshake *hs;
	size_t len;

	if (!s.id_local.has_key && tl_crypto_init() == 0)
		fuzz_setup(&s);
	if (size < 1)
		return 0;
	memset(&m, 0, sizeof(m));
	len = size - 1 < sizeof(m.raw) ? size - 1 : sizeof(m.raw);
	memcpy(m.raw, data + 1, len);

	switch (data[0] % 6) {
	case 0:
		tl_cookie_validate(&s.chk, m.raw, len, ip, sizeof(ip), 1, 1000);
		tl_noise_consume_initiation(&m.init, &s.id_local, fuzz_lookup_static, &s, 1000, &hs);
		break;
	case 1:
		tl_cookie_validate(&s.chk, m.raw, len, ip, sizeof(ip), 1, 1000);
		fuzz_expect_response(&s);
		tl_noise_consume_response(&m.resp, &s.id_local, fuzz_lookup_index, &s, &hs);
		break;
	case 4: {
		/* The control plane's two passes over an initiation, then its answer. */
		struct tl_noise_job j;
		struct tl_msg_response out;

		tl_noise_answer_initiation(&j, &m.init, &s.id_local, fuzz_lookup_static, &s);
		tl_noise_commit_initiation(&j, &m.init, 9, 1000, &out);
		tl_noise_job_wipe(&j);
		break;
	}
	case 5: {
		struct tl_noise_job j;

		fuzz_expect_response(&s);
		tl_noise_answer_response(&j, &m.resp, &s.id_local, fuzz_lookup_index, &s);
		tl_noise_commit_response(&j, &m.resp, fuzz_lookup_index, &s);
		tl_noise_job_wipe(&j);
		break;
	}
	case 2:
		fuzz_expect_response(&s);
		tl_cookie_consume_reply(&m.cookie, &s.hs, 1000);
		break;
	default:
		/* A consumed initiation of ours followed by a response: state machine paths. */
		if (tl_noise_consume_initiation(&m.init, &s.id_local, fuzz_lookup_static, &s, 1000,
						&hs) == 0) {
			struct tl_session_keys k;

			tl_noise_create_response(&m.resp, hs, 7, 1000);
			tl_noise_derive_session(hs, &k);
		}
		break;
	}
	return 0;
}
