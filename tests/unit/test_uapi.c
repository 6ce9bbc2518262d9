/* Unit tests for the UAPI socket's request handling, without a socket or a running
 * dataplane: replies carry a negative errno as `wg` reads it, requests are read as a stream
 * of lines (a line over the buffer is refused, no request is too large), and a client's line
 * buffer is all zero when the client is closed, whatever requests were pipelined into it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
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
	return check_report();
}
