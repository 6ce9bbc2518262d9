/* Text <-> binary for addresses, prefixes, endpoints and MACs, shared by the configuration,
 * the control API and the UAPI. No allocation, no I/O. */
#include "common/addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define TL_ADDR_TEXT_MAX 64   /* longer than any textual IPv4/IPv6 address */

int tl_ip_parse(struct tl_ip *ip, const char *s)
{
	struct tl_ip tmp;

	memset(&tmp, 0, sizeof(tmp));
	if (!s)
		return -1;
	if (inet_pton(AF_INET, s, tmp.addr) == 1)
		tmp.family = AF_INET;
	else if (inet_pton(AF_INET6, s, tmp.addr) == 1)
		tmp.family = AF_INET6;
	else
		return -1;
	*ip = tmp;
	return 0;
}

static unsigned tl_ip_max_len(const struct tl_ip *ip)
{
	return ip->family == AF_INET ? 32 : 128;
}

/* Decimal number of 1..digits digits, nothing else; -1 otherwise. */
static long tl_parse_decimal(const char *s, size_t digits)
{
	long v = 0;
	size_t n = 0;

	for (; s[n]; n++) {
		if (n >= digits || !isdigit((unsigned char)s[n]))
			return -1;
		v = v * 10 + (s[n] - '0');
	}
	return n ? v : -1;
}

/* Copies s[0..n) into buf (size TL_ADDR_TEXT_MAX) as a C string; -1 if too long. */
static int tl_copy_part(char *buf, const char *s, size_t n)
{
	if (n >= TL_ADDR_TEXT_MAX)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

int tl_prefix_parse(struct tl_prefix *p, const char *s)
{
	char addr[TL_ADDR_TEXT_MAX];
	struct tl_ip ip;
	const char *slash;
	long len;

	if (!s)
		return -1;
	slash = strchr(s, '/');
	if (tl_copy_part(addr, s, slash ? (size_t)(slash - s) : strlen(s)) < 0 ||
	    tl_ip_parse(&ip, addr) < 0)
		return -1;
	len = slash ? tl_parse_decimal(slash + 1, 3) : (long)tl_ip_max_len(&ip);
	if (len < 0 || len > (long)tl_ip_max_len(&ip))
		return -1;
	p->ip = ip;
	p->len = (uint8_t)len;
	return 0;
}

const char *tl_prefix_error(const char *s)
{
	char addr[TL_ADDR_TEXT_MAX];
	struct tl_ip ip;
	const char *slash = s ? strchr(s, '/') : NULL;
	long len;

	if (!s || tl_copy_part(addr, s, slash ? (size_t)(slash - s) : strlen(s)) < 0 ||
	    tl_ip_parse(&ip, addr) < 0)
		return "is not an IPv4/IPv6 prefix";
	if (!slash)
		return NULL;
	len = tl_parse_decimal(slash + 1, 3);
	if (len < 0)
		return "has a malformed prefix length";
	if (len > (long)tl_ip_max_len(&ip))
		return ip.family == AF_INET ? "has a prefix length above 32"
					    : "has a prefix length above 128";
	return NULL;
}

void tl_prefix_clear_host_bits(struct tl_prefix *p)
{
	unsigned bytes = tl_ip_max_len(&p->ip) / 8;

	for (unsigned i = 0; i < bytes; i++) {
		unsigned keep = p->len > 8 * i ? p->len - 8 * i : 0;

		if (keep < 8)
			p->ip.addr[i] &= (uint8_t)(0xff00u >> keep);
	}
	for (unsigned i = bytes; i < sizeof(p->ip.addr); i++)
		p->ip.addr[i] = 0;
}

/* Splits "host:port" or "[v6]:port" into the address text and the port text. */
static int tl_sockaddr_split(const char *s, char addr[TL_ADDR_TEXT_MAX], const char **port,
			     bool *bracketed)
{
	const char *colon;

	*bracketed = s[0] == '[';
	if (*bracketed) {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -1;
		*port = close + 2;
		return tl_copy_part(addr, s + 1, (size_t)(close - s - 1));
	}
	colon = strrchr(s, ':');
	if (!colon || memchr(s, ':', (size_t)(colon - s)))
		return -1;   /* no port, or a bare IPv6 address without brackets */
	*port = colon + 1;
	return tl_copy_part(addr, s, (size_t)(colon - s));
}

int tl_sockaddr_parse(struct tl_sockaddr *sa, const char *s)
{
	char addr[TL_ADDR_TEXT_MAX];
	const char *port;
	struct tl_ip ip;
	bool bracketed;
	long p;

	if (!s || tl_sockaddr_split(s, addr, &port, &bracketed) < 0 || tl_ip_parse(&ip, addr) < 0)
		return -1;
	if (bracketed != (ip.family == AF_INET6))
		return -1;
	p = tl_parse_decimal(port, 5);
	if (p < 1 || p > 65535)
		return -1;
	sa->ip = ip;
	sa->port = (uint16_t)p;
	return 0;
}

/* True if s looks like a DNS name (letters, digits, dots, dashes, at least one letter). */
static bool tl_looks_like_hostname(const char *s)
{
	bool letter = false;

	for (; *s; s++) {
		if (isalpha((unsigned char)*s))
			letter = true;
		else if (!isdigit((unsigned char)*s) && *s != '.' && *s != '-')
			return false;
	}
	return letter;
}

const char *tl_sockaddr_error(const char *s)
{
	char addr[TL_ADDR_TEXT_MAX];
	const char *port;
	struct tl_ip ip;
	bool bracketed;
	long p;

	if (!s || tl_sockaddr_split(s, addr, &port, &bracketed) < 0)
		return "is not an endpoint (want IPv4:port or [IPv6]:port)";
	if (tl_ip_parse(&ip, addr) < 0)
		return tl_looks_like_hostname(addr)
			? "is a hostname; hostnames are not accepted, give an IP address"
			: "is not an endpoint (want IPv4:port or [IPv6]:port)";
	if (bracketed != (ip.family == AF_INET6))
		return "is not an endpoint (want IPv4:port or [IPv6]:port)";
	p = tl_parse_decimal(port, 5);
	if (p < 1 || p > 65535)
		return "has a port outside 1..65535";
	return NULL;
}

int tl_mac_parse(uint8_t mac[6], const char *s)
{
	uint8_t tmp[6];

	if (!s || strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++) {
		const char *b = s + 3 * i;

		if (!isxdigit((unsigned char)b[0]) || !isxdigit((unsigned char)b[1]) ||
		    (i < 5 && b[2] != ':'))
			return -1;
		if (sscanf(b, "%2hhx", &tmp[i]) != 1)
			return -1;
	}
	memcpy(mac, tmp, sizeof(tmp));
	return 0;
}

static void tl_ip_format(char *out, size_t len, const struct tl_ip *ip)
{
	char buf[INET6_ADDRSTRLEN];

	if (!inet_ntop(ip->family, ip->addr, buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "?");
	snprintf(out, len, "%s", buf);
}

void tl_prefix_format(char *out, size_t len, const struct tl_prefix *p)
{
	char buf[INET6_ADDRSTRLEN];

	tl_ip_format(buf, sizeof(buf), &p->ip);
	snprintf(out, len, "%s/%u", buf, (unsigned)p->len);
}

void tl_sockaddr_format(char *out, size_t len, const struct tl_sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN];

	tl_ip_format(buf, sizeof(buf), &sa->ip);
	if (sa->ip.family == AF_INET6)
		snprintf(out, len, "[%s]:%u", buf, (unsigned)sa->port);
	else
		snprintf(out, len, "%s:%u", buf, (unsigned)sa->port);
}

bool tl_ip_eq(const struct tl_ip *a, const struct tl_ip *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

bool tl_prefix_eq(const struct tl_prefix *a, const struct tl_prefix *b)
{
	return a->len == b->len && tl_ip_eq(&a->ip, &b->ip);
}

int tl_prefix_cmp(const void *a, const void *b)
{
	const struct tl_prefix *p = a, *q = b;
	int r = (p->ip.family > q->ip.family) - (p->ip.family < q->ip.family);

	if (!r)
		r = (p->len > q->len) - (p->len < q->len);
	return r ? r : memcmp(p->ip.addr, q->ip.addr, sizeof(p->ip.addr));
}

bool tl_sockaddr_eq(const struct tl_sockaddr *a, const struct tl_sockaddr *b)
{
	return tl_ip_eq(&a->ip, &b->ip) && a->port == b->port;
}
