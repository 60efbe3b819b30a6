// SPDX-License-Identifier: MIT
/*
 * Every thread held (park_hold) while the saver changes the processes'
 * sockets: TCP connections in repair mode, UNIX sockets walked with a
 * peek offset. A tracer's death lets its tracees run at once, and they
 * would find their sockets so (a read in repair mode fails with EPERM, a
 * peek reads from the saver's offset). Held, a thread let go waits
 * HOLD_MS first; the guardian hears of the death earlier still (the
 * kernel closes a dying process's descriptors, so the guardian's socket
 * reads its end, before it detaches the tracees) and undoes those changes
 * meanwhile (docs/design.md, "A saver killed at any moment").
 */
#include <stdlib.h>

#include "buf.h"
#include "guard.h"
#include "park.h"
#include "saver.h"

#define HOLD_MS 2000

static struct park *held;
static size_t nheld;

/* Unholds and puts back every held thread; the first failure in e. */
int hold_release(struct ibcr_err *e)
{
	int rc = 0;

	for (size_t i = nheld; i-- > 0; ) {
		struct ibcr_err e2 = { "" }, e3 = { "" };
		int bad = park_unhold(&held[i], &e2);

		/* put back even when the unhold failed */
		if (park_release(&held[i], bad ? &e3 : &e2) || bad) {
			if (!rc)
				*e = e2;
			rc = -1;
		}
	}
	free(held);
	held = NULL;
	nheld = 0;
	return rc;
}

int hold_all(struct target *t, uint32_t n, struct ibcr_err *e)
{
	size_t all = 0;

	if (!guard_pid())
		return 0;	/* no guardian to undo anything: nothing to wait for */
	for (uint32_t i = 0; i < n; i++)
		all += t[i].zombie ? 0 : t[i].nthreads;
	held = xcalloc(all ? all : 1, sizeof(*held));
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; !t[i].zombie && k < t[i].nthreads; k++) {
			struct park *p = &held[nheld];

			if (park_thread(&t[i], t[i].tids[k], p, e))
				goto fail;
			nheld++;
			if (park_hold(p, HOLD_MS, e)) {
				struct ibcr_err ignored;

				park_release(p, &ignored);
				nheld--;
				goto fail;
			}
		}
	return 0;
fail:
	{
		struct ibcr_err ignored;

		hold_release(&ignored);
	}
	return -1;
}
