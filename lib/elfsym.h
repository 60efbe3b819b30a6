/* SPDX-License-Identifier: MIT */
#ifndef IBCR_ELFSYM_H
#define IBCR_ELFSYM_H

#include <stdint.h>

#include "err.h"

/*
 * Looks up a defined symbol in the dynamic symbol table of the ELF file
 * at `path` (a shared object mapped in some process) and returns its
 * value, i.e. its address relative to the object's load base.
 */
int elf_dynsym(const char *path, const char *name, uint64_t *value,
	       struct ibcr_err *e);

#endif
