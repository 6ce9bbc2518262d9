/* Unit tests for the UAPI socket's request handling, without a socket or a running
 * dataplane: replies carry a negative errno as `wg` reads it, requests are read as a stream
 * of lines (a line over the buffer is refused, no request is too large), and a client's line
 * buffer is all zero when the client is closed, whatever requests were pipelined into it.
 * The set=1 parser: no block it hands back holds a PSK (a recording allocator looks at each),
 * its bounds fail at the line that crosses them (TL_MAX_PEERS distinct keys, public_key and
 * allowed_ip lines), and a new key named several times is one new peer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "api/uapi_parse.h"
#include "ctrl/device.h"
#include "daemon/uapi.h"

#define KEY_LINE "private_key=a8dac1d8a70a751f0f699fb14ba1cff7b79cf4fbd8f09f44c6e4ee9a1d1f3a5a\n"

static size_t nonzero(const char *p, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] != 0;
	return k;
}

/* Feeds text to a client chunk bytes at a time, closes it; checks the reply and that the
 * buffer was wiped whole. */
static void feed_chunks(struct tl_device *dev, const char *what, const char *text, size_t len, size_t chunk,
			const char *want_reply)
{
	struct tl_buf reply = { 0 };
	char *seen = NULL;
	size_t n, seen_len = 0;

	CHECK(tl_uapi_test_client(dev, text, len, chunk, &seen, &seen_len, &reply) == 0, "%s: client ran", what);
	if (!seen)
		return;
	n = nonzero(seen, seen_len);
	CHECK(n == 0, "%s: %zu non-zero bytes left in the line buffer at close", what, n);
	CHECK(reply.len == strlen(want_reply) && (!reply.len || !memcmp(reply.p, want_reply, reply.len)),
	      "%s: reply '%.*s', want '%s'", what, (int)reply.len, reply.p ? reply.p : "", want_reply);
	free(reply.p);
	free(seen);
}

static void feed(struct tl_device *dev, const char *what, const char *text, const char *want_reply)
{
	feed_chunks(dev, what, text, strlen(text), 0, want_reply);
}

/* Requests far above a line buffer (a hub's `wg setconf` is megabytes): read line by line,
 * answered once each. A 3 MiB line is refused (EINVAL) and skipped to its end; 40 MiB of
 * lines without a blank one is still one request being read (no reply: nothing is too
 * large), and its blank line gets the answer. */
static void test_large(struct tl_device *dev, const char *einval, const char *two)
{
	size_t len = 3u << 20, big_len = 40u << 20, line = strlen("x=1\n");
	char *big = malloc(big_len + 2);

	CHECK(big != NULL, "memory for the large requests");
	if (!big)
		return;
	memset(big, 'a', len);
	memcpy(big, "hello=1\n" KEY_LINE "x=", strlen("hello=1\n" KEY_LINE "x="));
	memcpy(big + len - 2, "\n\nhello=2\n\n", 11);
	feed_chunks(dev, "a 3 MiB line in 64 KiB reads, then another request", big, len + 9, 65536, two);
	memcpy(big, "hello=1\n", 8);
	for (size_t off = 8; off + line <= big_len; off += line)
		memcpy(big + off, "x=1\n", line);
	feed_chunks(dev, "40 MiB of lines without the blank line: no reply yet", big, big_len - big_len % line, 1u << 20,
		    "");
	memcpy(big + big_len - big_len % line, "\n", 1);
	feed_chunks(dev, "40 MiB of lines, then the blank line: one reply", big, big_len - big_len % line + 1,
		    1u << 20, einval);
	free(big);
}

/* ---- the set=1 parser's memory and bounds ---------------------------------------------------- */

/* The PSK every peer of the request below carries, and how it shows in a freed block. */
static const uint8_t psk_pattern[TL_KEY_LEN] = "PSK-bytes-PSK-bytes-PSK-bytes-PS";

static size_t n_alloc, n_release, n_release_psk, n_release_bytes;

static void *rec_alloc(size_t size)
{
	n_alloc++;
	return calloc(1, size);
}

/* Every block the parser hands back: does it still hold (half of) the PSK? */
static void rec_release(void *p, size_t size)
{
	n_release++;
	n_release_bytes += size;
	if (memmem(p, size, psk_pattern, TL_KEY_LEN / 2) || memmem(p, size, psk_pattern + TL_KEY_LEN / 2, TL_KEY_LEN / 2))
		n_release_psk++;
	free(p);
}

static int parse_line(struct tl_uapi_set_req *r, const char *line)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "%s", line);
	return tl_uapi_set_parse_line(r, buf);
}

/* "public_key=<hex>" of the i-th test key (distinct for each i). */
static void key_line(char *buf, size_t len, const char *name, uint32_t i)
{
	uint8_t key[TL_KEY_LEN];
	char hex[2 * TL_KEY_LEN + 1];

	memset(key, 0x5a, sizeof(key));
	memcpy(key, &i, sizeof(i));
	tl_key_to_hex(hex, key);
	snprintf(buf, len, "%s=%s", name, hex);
}

static bool never_has(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	(void)ctx;
	(void)pub;
	return false;
}

/* The device holds the key of test key 0 only. */
static bool has_key0(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	uint8_t key[TL_KEY_LEN];
	uint32_t zero = 0;

	(void)ctx;
	memset(key, 0x5a, sizeof(key));
	memcpy(key, &zero, sizeof(zero));
	return !memcmp(key, pub, TL_KEY_LEN);
}

/* 300 peers with a PSK and three allowed IPs each: the op array and the allowed-IP arrays
 * move many times as they grow; every block handed back (moved, or freed with the request)
 * holds no PSK byte pattern, and every block taken is handed back. */
static void test_set_psk_wiped(void)
{
	const struct tl_uapi_alloc rec = { rec_alloc, rec_release };
	struct tl_uapi_set_req r = { 0 };
	char line[160], hex[2 * TL_KEY_LEN + 1];
	int err = 0;

	tl_key_to_hex(hex, psk_pattern);
	n_alloc = n_release = n_release_psk = n_release_bytes = 0;
	tl_uapi_set_alloc(&rec);
	for (uint32_t i = 0; i < 300 && !err; i++) {
		key_line(line, sizeof(line), "public_key", i);
		err = parse_line(&r, line);
		snprintf(line, sizeof(line), "preshared_key=%s", hex);
		err = err ? err : parse_line(&r, line);
		for (unsigned j = 0; j < 3 && !err; j++) {
			snprintf(line, sizeof(line), "allowed_ip=10.%u.%u.%u/32", i >> 8, i & 255, j);
			err = parse_line(&r, line);
		}
	}
	CHECK(err == 0 && r.n_peers == 300, "300 peers with a PSK parsed (%d, %zu)", err, r.n_peers);
	CHECK(n_release >= 6, "the op array moved as it grew: %zu blocks handed back before the request is freed",
	      n_release);
	CHECK(n_release_psk == 0, "growing: %zu of %zu blocks handed back still hold PSK bytes", n_release_psk,
	      n_release);
	tl_uapi_set_req_free(&r);
	CHECK(n_release_psk == 0, "growing and freeing: %zu of %zu blocks handed back still hold PSK bytes",
	      n_release_psk, n_release);
	CHECK(n_alloc == n_release, "every block taken was handed back: %zu taken, %zu back", n_alloc, n_release);
	tl_uapi_set_alloc(NULL);
}

/* A set over TL_MAX_PEERS distinct keys fails at the key that is one too many, with
 * ENOSPC, not at its blank line; a key named again is not another. */
static void test_set_max_keys(void)
{
	struct tl_uapi_set_req r = { 0 };
	char line[160];
	size_t i, bad = 0;
	int err = 0;

	for (i = 0; i < TL_UAPI_MAX_KEYS; i++) {
		key_line(line, sizeof(line), "public_key", (uint32_t)i);
		err = parse_line(&r, line);
		if (err) {
			bad = i;
			break;
		}
	}
	CHECK(err == 0, "%zu distinct public keys (TL_MAX_PEERS) parse: key %zu gave %s", TL_UAPI_MAX_KEYS, bad,
	      strerror(err));
	key_line(line, sizeof(line), "public_key", 7);
	CHECK(parse_line(&r, line) == 0, "a key named again at the limit is not another: accepted");
	key_line(line, sizeof(line), "public_key", (uint32_t)TL_UAPI_MAX_KEYS);
	err = parse_line(&r, line);
	CHECK(err == ENOSPC, "distinct key %zu (one over TL_MAX_PEERS): %s at its line, want ENOSPC",
	      TL_UAPI_MAX_KEYS + 1, err ? strerror(err) : "accepted");
	CHECK(r.n_peers == TL_UAPI_MAX_KEYS + 1, "the refused key added no operation (%zu)", r.n_peers);
	tl_uapi_set_req_free(&r);
}

/* The line bounds (set small here: the defaults are TL_UAPI_MAX_PEER_LINES and
 * TL_UAPI_MAX_AIPS), and the check's count of new peers. */
static void test_set_bounds(void)
{
	struct tl_uapi_set_view v = { .listen_port = 51820, .max_peers = 3, .has_peer = never_has };
	struct tl_uapi_set_req r = { .max_peer_lines = 8, .max_aips = 5 };
	char line[160];
	int err = 0;

	key_line(line, sizeof(line), "public_key", 1);
	for (unsigned i = 0; i < 8 && !err; i++)
		err = parse_line(&r, line);
	CHECK(err == 0, "the same key in 8 public_key lines (the bound): accepted (%s)", strerror(err));
	err = parse_line(&r, line);
	CHECK(err == E2BIG, "a 9th public_key line: %s, want E2BIG", err ? strerror(err) : "accepted");
	tl_uapi_set_req_free(&r);

	r = (struct tl_uapi_set_req){ .max_aips = 5 };
	key_line(line, sizeof(line), "public_key", 1);
	parse_line(&r, line);
	err = parse_line(&r, "allowed_ip=10.0.0.1/32");
	err = err ? err : parse_line(&r, "allowed_ip=10.0.0.2/32");
	key_line(line, sizeof(line), "public_key", 2);
	err = err ? err : parse_line(&r, line);
	for (unsigned i = 0; i < 3 && !err; i++) {
		snprintf(line, sizeof(line), "allowed_ip=10.0.1.%u/32", i);
		err = parse_line(&r, line);
	}
	CHECK(err == 0, "5 allowed_ip lines over two peers (the bound): accepted (%s)", strerror(err));
	err = parse_line(&r, "allowed_ip=10.0.2.0/24");
	CHECK(err == E2BIG, "a 6th allowed_ip line: %s, want E2BIG", err ? strerror(err) : "accepted");
	tl_uapi_set_req_free(&r);

	/* Key 1 in five operations, keys 2 and 3 once: three new peers. */
	r = (struct tl_uapi_set_req){ 0 };
	for (unsigned i = 0; i < 5; i++) {
		key_line(line, sizeof(line), "public_key", 1);
		parse_line(&r, line);
		snprintf(line, sizeof(line), "allowed_ip=10.0.0.%u/32", i);
		parse_line(&r, line);
	}
	key_line(line, sizeof(line), "public_key", 2);
	parse_line(&r, line);
	key_line(line, sizeof(line), "public_key", 3);
	err = parse_line(&r, line);
	CHECK(err == 0 && r.n_peers == 7, "7 operations on 3 keys parsed (%zu)", r.n_peers);
	err = tl_uapi_set_check(&r, &v);
	CHECK(err == 0, "3 new peers (one named 5 times) on an empty device of 3: %s, want accepted",
	      err ? strerror(err) : "accepted");
	v.max_peers = 2;
	err = tl_uapi_set_check(&r, &v);
	CHECK(err == ENOSPC, "... on a device of 2: %s, want ENOSPC", err ? strerror(err) : "accepted");
	/* The device holds key 0 and one peer; key 0 named twice more adds none. */
	v.n_peers = 1;
	v.max_peers = 4;
	v.has_peer = has_key0;
	key_line(line, sizeof(line), "public_key", 0);
	parse_line(&r, line);
	parse_line(&r, line);
	err = tl_uapi_set_check(&r, &v);
	CHECK(err == 0, "... plus key 0 (held) twice, on a device of 4 holding 1: %s, want accepted",
	      err ? strerror(err) : "accepted");
	v.max_peers = 3;
	err = tl_uapi_set_check(&r, &v);
	CHECK(err == ENOSPC, "... on a device of 3 holding 1: %s, want ENOSPC", err ? strerror(err) : "accepted");
	tl_uapi_set_req_free(&r);
}

int main(void)
{
	struct tl_device dev = { 0 };
	char err[64];

	/* An unknown operation needs nothing of the device: EINVAL, as minus the errno. */
	snprintf(err, sizeof(err), "errno=%d\n\n", -EINVAL);
	feed(&dev, "unknown operation", "hello=1\n\n", err);
	/* A request whose blank line has not arrived yet, behind an answered one: its text was
	 * moved to the front of the buffer, leaving a copy in the tail. */
	feed(&dev, "pipelined set with a key, incomplete", "hello=1\n\nset=1\n" KEY_LINE "listen_port=1", err);
	/* The same key in the request that was answered. */
	feed(&dev, "answered request with a key", "hello=1\n" KEY_LINE "\n", err);
	/* Two answered, a third pending. */
	{
		char two[64];

		snprintf(two, sizeof(two), "errno=%d\n\nerrno=%d\n\n", -EINVAL, -EINVAL);
		feed(&dev, "two answered, one pending", "x=1\n" KEY_LINE "\nhello=2\n\nset=1\n" KEY_LINE, two);
	}
	/* A blank line split across two reads is found. */
	feed_chunks(&dev, "blank line across reads", "hello=1\n" KEY_LINE "\n", strlen("hello=1\n" KEY_LINE "\n"),
		    strlen("hello=1\n" KEY_LINE), err);
	{
		char two[64];

		snprintf(two, sizeof(two), "errno=%d\n\nerrno=%d\n\n", -EINVAL, -EINVAL);
		test_large(&dev, err, two);
	}
	test_set_psk_wiped();
	test_set_bounds();
	test_set_max_keys();
	return check_report();
}
