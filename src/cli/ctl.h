/* tunlessctl internals shared by its files. */
#ifndef TL_CLI_CTL_H
#define TL_CLI_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/request.h"
#include "api/yamlw.h"

enum { CTL_OK = 0, CTL_REFUSED = 1, CTL_USAGE = 2, CTL_NOCONN = 3 };
enum ctl_out_mode { CTL_OUT_HUMAN, CTL_OUT_YAML, CTL_OUT_JSON };

/* tunlessctl.c: "tunlessctl: " and the message on stderr; returns code. */
int __attribute__((format(printf, 2, 3))) ctl_fail(int code, const char *fmt, ...);

/* ctl_request.c */
/* The request document for op and its ARG=VALUE list, checked with the spec. 0, or
 * CTL_USAGE with a message printed. */
int ctl_request_build(const struct tl_api_spec *spec, const struct tl_api_op *op, int argc, char **argv,
		      struct tl_buf *out);
/* Sends one request and reads its reply. 0, or CTL_NOCONN with a message printed. */
int ctl_call(const char *path, const struct tl_buf *req, struct tl_buf *reply);

/* ctl_output.c */
struct ctl_reply {
	yaml_document_t doc;
	yaml_node_t *root;
	bool ok;
};

const char *ctl_ystr(yaml_document_t *d, yaml_node_t *n, const char *key, const char *def);
uint64_t ctl_yu64(yaml_document_t *d, yaml_node_t *n, const char *key);
const char *ctl_human_bytes(char *buf, size_t len, double b);
const char *ctl_human_rate(char *buf, size_t len, double bits);
/* 0 (r->doc to tl_ydoc_delete), or -1 if the text is not a YAML mapping. */
int ctl_reply_parse(const struct tl_buf *text, struct ctl_reply *r);
/* Prints the reply; returns the exit status. */
int ctl_reply_print(const char *op, const struct tl_buf *text, enum ctl_out_mode mode);

/* ctl_watch.c: tunlessctl watch [-i SECONDS] [--count N] */
int ctl_watch_main(const struct tl_api_spec *spec, const char *path, int argc, char **argv, enum ctl_out_mode mode);

/* ctl_help.c */
void ctl_usage(FILE *o, const struct tl_api_spec *spec);
int ctl_help_op(FILE *o, const struct tl_api_op *op);
int ctl_help_markdown(FILE *o, const struct tl_api_spec *spec);
/* The read model's fields as a markdown table (docs/metrics.md carries it). */
int ctl_help_read_model(FILE *o);

#endif
