/* IPv4/IPv6 addresses, prefixes and endpoints, and their text forms. */
#ifndef TL_COMMON_ADDR_H
#define TL_COMMON_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IPv4 or IPv6 address; v4 is stored in addr[0..3]. */
struct tl_ip {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

struct tl_prefix {
	struct tl_ip ip;     /* host bits cleared by the configuration's semantic pass */
	uint8_t len;
};

struct tl_sockaddr {
	struct tl_ip ip;
	uint16_t port;       /* host order */
};

/* Parsers: 0 or -1. */
int tl_ip_parse(struct tl_ip *ip, const char *s);             /* "10.0.0.1", "fd00::1" */
int tl_prefix_parse(struct tl_prefix *p, const char *s);      /* "10.0.0.0/24", "fd00::/64", bare IP = host */
int tl_sockaddr_parse(struct tl_sockaddr *sa, const char *s); /* "1.2.3.4:51820", "[fd00::1]:51820" */
int tl_mac_parse(uint8_t mac[6], const char *s);              /* "02:00:00:00:00:01" */
/* For error messages: why a string is rejected by tl_prefix_parse / tl_sockaddr_parse (a
 * static phrase such as "is not an IPv4/IPv6 prefix"), or NULL if the string is valid. */
const char *tl_prefix_error(const char *s);
const char *tl_sockaddr_error(const char *s);

/* Host bits of a prefix cleared (as wg does for allowed IPs). */
void tl_prefix_clear_host_bits(struct tl_prefix *p);

void tl_prefix_format(char *out, size_t len, const struct tl_prefix *p);
void tl_sockaddr_format(char *out, size_t len, const struct tl_sockaddr *sa);

bool tl_ip_eq(const struct tl_ip *a, const struct tl_ip *b);
bool tl_prefix_eq(const struct tl_prefix *a, const struct tl_prefix *b);
/* Orders prefixes (family, length, address) for qsort and bsearch. */
int tl_prefix_cmp(const void *a, const void *b);
bool tl_sockaddr_eq(const struct tl_sockaddr *a, const struct tl_sockaddr *b);

#endif
