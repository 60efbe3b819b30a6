// SPDX-License-Identifier: MIT
/*
 * The saving kernel's [vdso], once per image (VDSO section): a restore
 * on another kernel puts these bytes back at the old address and
 * redirects their entry points to the running kernel's vdso
 * (loader/vdso.c), so the pointers libc cached keep working. Every
 * process of one kernel maps the same vdso; one that does not is
 * refused, since the section can hold only one.
 */
#include <string.h>

#include "saver.h"

int vdso_write_section(const struct target *t, uint32_t n, struct img_writer *w,
		       struct ibcr_err *e)
{
	const struct target *first = NULL;

	for (uint32_t i = 0; i < n; i++) {
		if (!t[i].vdso)
			continue;
		if (!first) {
			first = &t[i];
			continue;
		}
		if (t[i].vdso_len != first->vdso_len ||
		    memcmp(t[i].vdso, first->vdso, first->vdso_len))
			return ibcr_fail(e, "pid %d: its [vdso] differs from that of pid %d: "
					 "one image holds processes of one kernel",
					 (int)t[i].pid, (int)first->pid);
	}
	if (!first)
		return 0;	/* static programs without a vdso, zombies */
	return imgw_section(w, IBCR_SEC_VDSO, IBCR_PROC_NONE, NULL, first->vdso,
			    first->vdso_len, e);
}
