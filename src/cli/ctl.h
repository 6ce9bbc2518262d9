/* tunlessctl internals shared by its files. */
#ifndef TL_CLI_CTL_H
#define TL_CLI_CTL_H

#include <stdio.h>

#include "api/request.h"
#include "api/yamlw.h"

enum { CTL_OK = 0, CTL_REFUSED = 1, CTL_USAGE = 2, CTL_NOCONN = 3 };

/* ctl_help.c */
void ctl_usage(FILE *o, const struct tl_api_spec *spec);
int ctl_help_op(FILE *o, const struct tl_api_op *op);
int ctl_help_markdown(FILE *o, const struct tl_api_spec *spec);
/* The read model's fields as a markdown table (docs/metrics.md carries it). */
int ctl_help_read_model(FILE *o);

#endif
