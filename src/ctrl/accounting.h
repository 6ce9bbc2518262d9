/* Per-port packet conservation, exported as /tunless/conservation (accounting.c). */
#ifndef TL_ACCOUNTING_H
#define TL_ACCOUNTING_H

struct tl_device;

int tl_accounting_register(struct tl_device *dev);

#endif
