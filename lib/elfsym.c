// SPDX-License-Identifier: MIT
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

static int in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int search(const uint8_t *f, uint64_t size, const char *name, uint64_t *value)
{
	const Elf64_Ehdr *eh = (const void *)f;
	const Elf64_Shdr *sh;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(*sh) ||
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

			if (sym[k].st_name >= str->sh_size || sym[k].st_shndx == SHN_UNDEF ||
			    !memchr(s, 0, str->sh_size - sym[k].st_name))
				continue;
			if (!strcmp(s, name)) {
				*value = sym[k].st_value;
				return 0;
			}
		}
	}
	return 1;
}

int elf_dynsym(const char *path, const char *name, uint64_t *value,
	       struct ibcr_err *e)
{
	struct stat st;
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
	rc = search(f, (uint64_t)st.st_size, name, value);
	munmap(f, (size_t)st.st_size);
	if (rc < 0)
		return ibcr_fail(e, "%s: not a 64-bit ELF file with sections", path);
	if (rc > 0)
		return ibcr_fail(e, "%s: no symbol %s", path, name);
	return 0;
}
