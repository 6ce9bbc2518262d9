/* What the parts of the configuration loader share, private to them: config_schema.c (the
 * libcyaml schema of the raw structs), config.c (the semantic pass into struct tl_config),
 * config_doc.c (the document's path -> line index, the one-line errors, libcyaml's memory
 * and messages). */
#ifndef TL_CONFIG_PRIV_H
#define TL_CONFIG_PRIV_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cyaml/cyaml.h>

#include "config/config.h"

/* A hub of 100 000 peers with ten allowed IPs each is about 30 MB of YAML. */
#define TL_CFG_MAX_FILE   (128u << 20)
#define TL_CFG_MAX_DEPTH  64
#define TL_CFG_LOG_MAX    4096
#define TL_CFG_PATH_MAX   256
#define TL_CFG_SHOW       "%.80s"      /* how much of a bad value an error echoes */

/* ---- raw document, as libcyaml loads it ------------------------------------------------ */

struct tl_raw_aqm {
	int64_t *target_us;
	int64_t *interval_us;
	int64_t *quantum;
	int64_t *flows;
	int64_t *limit;
	int64_t *memory_limit;
	bool *ecn;
	int64_t *rtt_us;
	int64_t *l4s_us;
	int64_t *flow_rtt_pct;
	int64_t *quantum_fast;
};

struct tl_raw_shaper {
	int64_t *rate_bps;
	int64_t *burst_bytes;
};

struct tl_raw_port {
	char *iface;
	char *driver;
	char *devargs;
	int64_t *queues;
	bool *zero_copy;
	struct tl_raw_aqm *aqm;
	struct tl_raw_shaper *shaper;
};

struct tl_raw_metrics {
	char *listen;
	int64_t *peer_series_max;
};

struct tl_raw_ports {
	struct tl_raw_port *wan;
	struct tl_raw_port *lan;
};

struct tl_raw_peer {
	char *public_key;
	char *preshared_key;
	char *preshared_key_file;
	char *endpoint;
	char **allowed_ips;
	unsigned allowed_ips_count;
	int64_t *persistent_keepalive;
	char *name;
};

struct tl_raw_neighbour {
	char *ip;
	char *mac;
	char *port;
};

struct tl_raw_timers {
	double *rekey_after_time;
	double *reject_after_time;
	double *rekey_attempt_time;
	double *rekey_timeout;
	double *keepalive_timeout;
	uint64_t *rekey_after_messages;
	uint64_t *reject_after_messages;
};

struct tl_raw_config {
	char *name;
	char *mode;
	char *private_key;
	char *private_key_file;
	int64_t *listen_port;
	int64_t *mtu;
	char **addresses;
	unsigned addresses_count;
	char *workers;
	char *handshake_threads;
	int64_t *staged_packets;
	struct tl_raw_ports *ports;
	struct tl_raw_peer *peers;
	unsigned peers_count;
	struct tl_raw_neighbour *neighbours;
	unsigned neighbours_count;
	struct tl_raw_timers *timers;
	char **eal;
	unsigned eal_count;
	struct tl_raw_metrics *metrics;
};

/* The schema of struct tl_raw_config (config_schema.c). */
extern const cyaml_schema_value_t tl_cfg_schema;

struct tl_cfg_node {
	char *path;
	char *value;       /* scalars only; wiped on free */
	unsigned line;     /* 1-based */
	size_t seq;        /* document order, for stable sorting */
};

struct tl_cfg_index {
	struct tl_cfg_node *nodes;
	size_t n, cap;
};

struct tl_cfg_ctx {
	const char *file;
	char *err;
	size_t errlen;
	bool failed;
	struct tl_cfg_index ix;
	char log[TL_CFG_LOG_MAX];   /* libcyaml's error messages, concatenated */
	size_t log_len;
	struct tl_config *cfg;      /* for its warnings */
};

/* Writes the error line "<file>:<line>: <path>: <why>" (first failure wins); returns -1. */
int tl_cfg_fail_at(struct tl_cfg_ctx *c, unsigned line, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same, at the line the index has for path. */
#define tl_cfg_fail(c, path, ...) tl_cfg_fail_at((c), tl_cfg_line((c), (path)), (path), __VA_ARGS__)
/* Appends a warning line to c->cfg->warnings. */
void tl_cfg_warn(struct tl_cfg_ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The index entry of path (a scalar's text, its line), or NULL. */
const struct tl_cfg_node *tl_cfg_lookup(const struct tl_cfg_ctx *c, const char *path);
/* The line of path, or of its nearest indexed parent. */
unsigned tl_cfg_line(const struct tl_cfg_ctx *c, const char *path);
/* Walks the document once with libyaml: the index, or a syntax error (-1, c->err set). */
int tl_cfg_index_build(struct tl_cfg_ctx *c, const char *text, size_t len);
/* Frees the index, its scalar values wiped. */
void tl_cfg_index_free(struct tl_cfg_index *ix);
/* libcyaml's allocator: every block it frees is wiped first. */
void *tl_cfg_mem(void *ctx, void *ptr, size_t size);
/* libcyaml's logger: error messages collected in c->log. */
void tl_cfg_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args);
/* Turns libcyaml's failure and its messages into one error line; returns -1. */
int tl_cfg_cyaml_fail(struct tl_cfg_ctx *c, cyaml_err_t err);
/* config_unique.c: -1 (with the message) where two peers share a key or an allowed IP. */
int tl_cfg_peers_unique(struct tl_cfg_ctx *c, const struct tl_config *cfg);

#endif
