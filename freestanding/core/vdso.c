// SPDX-License-Identifier: MIT
/*
 * A vdso proxy (loader/vdso.c): the saved [vdso]'s bytes, with their entry
 * points redirected into this kernel's vdso, at the address the process
 * had them, so that the pointers its C library cached lead there. It is
 * never writable: the bytes go in through /proc/self/mem, which also
 * keeps the instruction cache right where that matters (aarch64).
 */
#include <linux/mman.h>

#include "core.h"
#include "sys.h"

void core_vdso_proxy(struct plan *p)
{
	long rc, fd;

	if (!p->proxy_len)
		return;
	rc = sys_mmap(p->proxy_addr, p->proxy_len, PROT_READ | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (rc != (long)p->proxy_addr)
		core_die(p, "mapping the vdso proxy at %#lx: error %ld",
			 (unsigned long)p->proxy_addr, -rc);
	fd = SYS(__NR_openat, -100 /* AT_FDCWD */, "/proc/self/mem", 2 /* O_RDWR */, 0, 0, 0);
	if (fd < 0)
		core_die(p, "vdso proxy: opening /proc/self/mem: error %ld", -fd);
	rc = SYS(__NR_pwrite64, fd, p->proxy, p->proxy_len, p->proxy_addr, 0, 0);
	sys_close((int)fd);
	if (rc != (long)p->proxy_len)
		core_die(p, "writing the vdso proxy at %#lx: error %ld",
			 (unsigned long)p->proxy_addr, rc < 0 ? -rc : 5 /* EIO */);
	core_trace(p, "vdso proxy at %#lx", (unsigned long)p->proxy_addr);
}
