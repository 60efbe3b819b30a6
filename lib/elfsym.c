// SPDX-License-Identifier: MIT
/*
 * ELF symbols and notes, from a file or from bytes in memory (a vdso):
 * every range is checked against the size first, since the bytes may
 * come from an image or a file that is not what it claims.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "elfsym.h"

static int in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static const Elf64_Ehdr *elf_header(const uint8_t *f, uint64_t size)
{
	const Elf64_Ehdr *eh = (const void *)f;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	return eh;
}

/*
 * Calls fn for each defined symbol of the dynamic symbol table (the
 * only table a vdso or a stripped library keeps) until fn returns
 * non-zero. -1: not a 64-bit ELF object with sections; else fn's last
 * answer (0: all seen).
 */
static int each_dynsym(const uint8_t *f, uint64_t size,
		       int (*fn)(void *arg, const char *name, const Elf64_Sym *s), void *arg)
{
	const Elf64_Ehdr *eh = elf_header(f, size);
	const Elf64_Shdr *sh;

	if (!eh || eh->e_shentsize != sizeof(*sh) ||
	    !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh), size))
		return -1;
	sh = (const void *)(f + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *str;
		const Elf64_Sym *sym;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		str = &sh[sh[i].sh_link];
		if (!in_file(sh[i].sh_offset, sh[i].sh_size, size) ||
		    !in_file(str->sh_offset, str->sh_size, size))
			return -1;
		sym = (const void *)(f + sh[i].sh_offset);
		for (uint64_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
			const char *s = (const char *)f + str->sh_offset + sym[k].st_name;
			int rc;

			if (sym[k].st_name >= str->sh_size || sym[k].st_shndx == SHN_UNDEF ||
			    !memchr(s, 0, str->sh_size - sym[k].st_name))
				continue;
			rc = fn(arg, s, &sym[k]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

struct lookup {
	const char *name;
	uint64_t value;
};

static int match(void *arg, const char *name, const Elf64_Sym *s)
{
	struct lookup *l = arg;

	if (strcmp(name, l->name))
		return 0;
	l->value = s->st_value;
	return 1;
}

int elf_dynsym(const char *path, const char *name, uint64_t *value,
	       struct ibcr_err *e)
{
	struct stat st;
	struct lookup l = { name, 0 };
	void *f;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "opening %s", path);
	if (fstat(fd, &st)) {
		close(fd);
		return ibcr_fail_errno(e, errno, "%s", path);
	}
	f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return ibcr_fail_errno(e, errno, "reading %s", path);
	rc = each_dynsym(f, (uint64_t)st.st_size, match, &l);
	munmap(f, (size_t)st.st_size);
	if (rc < 0)
		return ibcr_fail(e, "%s: not a 64-bit ELF file with sections", path);
	if (!rc)
		return ibcr_fail(e, "%s: no symbol %s", path, name);
	*value = l.value;
	return 0;
}

struct collect {
	const uint8_t *base;
	uint64_t vaddr;		/* of the first loadable segment */
	struct elf_func *out;
	size_t n, cap;
};

static int add_func(void *arg, const char *name, const Elf64_Sym *s)
{
	struct collect *c = arg;

	if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value < c->vaddr)
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->out = xrealloc(c->out, c->cap * sizeof(*c->out));
	}
	c->out[c->n++] = (struct elf_func){ name, s->st_value - c->vaddr, s->st_size };
	return 0;
}

/* The program headers, all inside f, or NULL; *n of them. */
static const Elf64_Phdr *phdrs(const uint8_t *f, uint64_t size, unsigned *n)
{
	const Elf64_Ehdr *eh = elf_header(f, size);

	if (!eh || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), size))
		return NULL;
	*n = eh->e_phnum;
	return (const void *)(f + eh->e_phoff);
}

/* The lowest PT_LOAD's vaddr: symbol values are relative to the load base. */
static int first_load(const uint8_t *f, uint64_t size, uint64_t *vaddr)
{
	unsigned n = 0;
	const Elf64_Phdr *ph = phdrs(f, size, &n);
	int found = 0;

	if (!ph)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && (!found++ || ph[i].p_vaddr < *vaddr))
			*vaddr = ph[i].p_vaddr;
	return found ? 0 : -1;
}

int elf_funcs_mem(const uint8_t *f, uint64_t size, struct elf_func **out, size_t *n)
{
	struct collect c = { f, 0, NULL, 0, 0 };

	*out = NULL;
	*n = 0;
	if (first_load(f, size, &c.vaddr) || each_dynsym(f, size, add_func, &c) < 0) {
		free(c.out);
		return -1;
	}
	*out = c.out;
	*n = c.n;
	return 0;
}

int elf_build_id_mem(const uint8_t *f, uint64_t size, uint8_t *id, size_t max, size_t *len)
{
	unsigned n = 0;
	const Elf64_Phdr *ph = phdrs(f, size, &n);

	if (!ph)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = ph[i].p_offset, end = off + ph[i].p_filesz;

		if (ph[i].p_type != PT_NOTE || !in_file(off, ph[i].p_filesz, size))
			continue;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			Elf64_Nhdr nh;
			uint64_t name, desc;

			memcpy(&nh, f + off, sizeof(nh));
			name = off + sizeof(nh);
			desc = name + ((nh.n_namesz + 3ull) & ~3ull);
			if (desc > end || nh.n_descsz > end - desc)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(f + name, "GNU", 4) && nh.n_descsz && nh.n_descsz <= max) {
				memcpy(id, f + desc, nh.n_descsz);
				*len = nh.n_descsz;
				return 0;
			}
			off = desc + ((nh.n_descsz + 3ull) & ~3ull);
		}
	}
	return 1;
}
