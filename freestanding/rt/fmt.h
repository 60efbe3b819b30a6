/* SPDX-License-Identifier: MIT */
#ifndef IBCR_FMT_H
#define IBCR_FMT_H

#include <stdarg.h>
#include <stddef.h>

/*
 * A small snprintf for the freestanding restore core: %s %c %d %i %u %x
 * %p %% with the l and ll modifiers and a '#' flag for 0x. Always
 * NUL-terminates; returns the length written.
 */
size_t fmt_v(char *buf, size_t size, const char *f, va_list ap);
__attribute__((format(printf, 3, 4)))
size_t fmt(char *buf, size_t size, const char *f, ...);

#endif
