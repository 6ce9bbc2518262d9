/* tunlessctl internals shared by its files. */
#ifndef TL_CLI_CTL_H
#define TL_CLI_CTL_H

#include <stdio.h>

#include "ctrl/ctlspec.h"

enum { CTL_OK = 0, CTL_REFUSED = 1, CTL_USAGE = 2, CTL_NOCONN = 3 };

/* ctl_help.c */
void ctl_usage(FILE *o, const struct tl_cspec *spec);
int ctl_help_op(FILE *o, const struct tl_cop *op);
int ctl_help_markdown(FILE *o, const struct tl_cspec *spec);

#endif
