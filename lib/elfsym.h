/* SPDX-License-Identifier: MIT */
#ifndef IBCR_ELFSYM_H
#define IBCR_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * Looks up a defined symbol in the dynamic symbol table of the ELF file
 * at `path` (a shared object mapped in some process) and returns its
 * value, i.e. its address relative to the object's load base.
 */
int elf_dynsym(const char *path, const char *name, uint64_t *value,
	       struct ibcr_err *e);

/* A defined function of a dynamic symbol table. */
struct elf_func {
	const char *name;	/* points into the ELF bytes */
	uint64_t off;		/* from the object's load base */
	uint64_t size;
};

/*
 * The defined functions of the ELF object in f[0..size) (a vdso as
 * mapped): *out is malloc'd (free it), names point into f. -1 when it
 * is not a 64-bit ELF object with a dynamic symbol table in range.
 */
int elf_funcs_mem(const uint8_t *f, uint64_t size, struct elf_func **out, size_t *n);

/*
 * The GNU build-id note of the ELF file in f[0..size) (its first pages
 * suffice: the note is at the start), up to max bytes into id: 0 found
 * (*len its length), 1 none, -1 not a 64-bit ELF file.
 */
int elf_build_id_mem(const uint8_t *f, uint64_t size, uint8_t *id, size_t max, size_t *len);

#endif
