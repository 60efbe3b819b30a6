// SPDX-License-Identifier: MIT
/*
 * The kernel's special mappings ([vvar], [vvar_vclock], [vdso]: whatever
 * set a kernel has, docs/design-notes.md "Special mappings").
 *
 * On the kernel the image was made on, each moves back to its saved
 * address. On another kernel (its [vdso] differs), the C library's
 * cached pointers into the old vdso must keep working: the saved vdso's
 * bytes (VDSO section) go back at their old address as a proxy whose
 * entry points jump to this kernel's functions of the same name, and
 * this kernel's set moves, as one block, to a place free in the saved
 * layout near the old one (the vdso finds its data pages at a fixed
 * distance). An entry point this kernel lacks gets the system call it is
 * the fast path of; one without such a stand-in is refused here, before
 * anything changes, naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "buf.h"
#include "rt/crc32c.h"
#include "elfsym.h"
#include "loader.h"
#include "procfs.h"
#include "vdsojmp.h"

#define MARGIN (2ul << 20)	/* below a stack: its guard gap */
#define LOWEST (1ul << 20)	/* nothing below: mmap_min_addr and NULL */

struct vdso_patch {
	const char *name;	/* in the saved bytes */
	uint64_t off;		/* entry point, from the saved vdso's start */
	uint64_t room;		/* bytes of its function we may overwrite */
	uint64_t to_off;	/* its twin in this kernel's vdso, from its start */
	enum vdso_stub stub;	/* VDSO_STUB_NONE: a jump to the twin */
	long nr;		/* VDSO_STUB_SYSCALL */
};

struct vdso_proxy {
	uint8_t *bytes;		/* the saved vdso, or NULL: the process had none */
	uint64_t len;
	uint64_t old_start;	/* where the process had it */
	struct vdso_patch *patch;
	size_t npatch;
	uint64_t lo, hi;	/* this kernel's special mappings in the loader: one block */
	uint64_t vdso_off;	/* this kernel's [vdso], from lo */
	uint64_t park;		/* their total size */
};

static int is_kernel_special(const char *name)
{
	return name[0] == '[' && strcmp(name, "[heap]") && strcmp(name, "[stack]") &&
	       strcmp(name, "[vsyscall]") && strncmp(name, "[anon", 5);
}

static const struct maps_entry *find_special(const struct maps_entry *m, size_t n,
					     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].path, name))
			return &m[i];
	return NULL;
}

/* IBCR_VDSO_PROXY=1: the proxy even on the same kernel (tests, aarch64). */
static int proxy_forced(void)
{
	const char *v = getenv("IBCR_VDSO_PROXY");

	return v && *v && *v != '0';
}

/*
 * The same kernel: every saved special mapping has its twin here, of
 * the same size, none is left over, and the [vdso] is byte for byte
 * this one (its CRC).
 */
static int same_kernel(const struct ibcr_process_state *ps, const struct maps_entry *m,
		       size_t n)
{
	size_t nsaved = 0, ncur = 0;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		const struct maps_entry *c;

		if (v->kind != IBCR_VMA_SPECIAL)
			continue;
		nsaved++;
		c = find_special(m, n, ps->vma_names[i]);
		if (!c || c->end - c->start != v->end - v->start)
			return 0;
		if (!strcmp(ps->vma_names[i], "[vdso]") &&
		    crc32c(0, (void *)(uintptr_t)c->start, c->end - c->start) != v->file_ino)
			return 0;
	}
	for (size_t i = 0; i < n; i++)
		ncur += is_kernel_special(m[i].path);
	return ncur == nsaved;
}

static const struct elf_func *twin(const struct elf_func *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* The stand-in for the entry point `name`, or VDSO_STUB_NONE. */
static enum vdso_stub standin(const char *name, long *nr)
{
	size_t k = strlen(arch_vdso_prefix);

	if (!strncmp(name, arch_vdso_prefix, k))
		name += k;
	for (const struct vdso_standin *s = arch_vdso_standins; s->name; s++)
		if (!strcmp(name, s->name)) {
			*nr = s->nr;
			return s->stub;
		}
	return VDSO_STUB_NONE;
}

/* How many bytes a patch may take at most: the far jump, or its stand-in. */
static size_t patch_need(const struct vdso_patch *pt)
{
	uint8_t code[VDSO_PATCH_MAX];

	if (pt->stub == VDSO_STUB_NONE)
		return arch_vdso_jump(code, 0, 1ull << 62, sizeof(code));
	return arch_vdso_stub(code, pt->stub, pt->nr, sizeof(code));
}

/*
 * One patch per entry point (aliases such as clock_gettime and
 * __vdso_clock_gettime share one): a jump to the first alias this
 * kernel has, else the stand-in of the first that has one.
 */
static int add_patch(struct vdso_proxy *vp, const struct elf_func *old, size_t nold,
		     size_t k, const struct elf_func *cur, size_t ncur, struct ibcr_err *e)
{
	struct vdso_patch pt = { old[k].name, old[k].off, old[k].size, 0, VDSO_STUB_NONE, 0 };
	int have = 0;

	for (size_t i = 0; i < nold && !have; i++) {
		const struct elf_func *t;

		if (old[i].off != old[k].off)
			continue;
		if (i < k)
			return 0;	/* done with its first alias */
		if ((t = twin(cur, ncur, old[i].name))) {
			pt.to_off = t->off;
			have = 1;
		}
	}
	for (size_t i = k; i < nold && !have; i++) {
		if (old[i].off != old[k].off)
			continue;
		pt.stub = standin(old[i].name, &pt.nr);
		pt.name = old[i].name;
		have = pt.stub != VDSO_STUB_NONE;
	}
	if (!have)
		return ibcr_fail(e, "the image comes from another kernel, whose [vdso] has %s; "
				 "this kernel's has not, and nothing can stand in for it",
				 old[k].name);
	if (pt.stub == VDSO_STUB_KEEP)
		return 0;
	if (pt.off + patch_need(&pt) > vp->len || pt.room < patch_need(&pt))
		return ibcr_fail(e, "the image comes from another kernel: its [vdso] function "
				 "%s is too short (%llu bytes) to be redirected", pt.name,
				 (unsigned long long)pt.room);
	vp->patch = xrealloc(vp->patch, (vp->npatch + 1) * sizeof(*vp->patch));
	vp->patch[vp->npatch++] = pt;
	return 0;
}

static int plan_patches(struct vdso_proxy *vp, const struct maps_entry *cur,
			struct ibcr_err *e)
{
	struct elf_func *old = NULL, *now = NULL;
	size_t nold = 0, nnow = 0;
	int rc = 0;

	if (elf_funcs_mem(vp->bytes, vp->len, &old, &nold))
		return ibcr_fail(e, "the image's saved [vdso] is not an ELF object with symbols");
	if (elf_funcs_mem((const uint8_t *)(uintptr_t)cur->start, cur->end - cur->start,
			  &now, &nnow)) {
		free(old);
		return ibcr_fail(e, "this kernel's [vdso] is not an ELF object with symbols");
	}
	for (size_t k = 0; k < nold && !rc; k++)
		rc = add_patch(vp, old, nold, k, now, nnow, e);
	free(old);
	free(now);
	return rc;
}

/*
 * A thread stopped inside the old vdso's code resumes there: not where
 * a patch goes, and only in a system call made from it (the code after
 * it returns; code elsewhere reads the saving kernel's data pages).
 */
static int check_threads(const struct vdso_proxy *vp, const struct ibcr_process_state *ps,
			 struct ibcr_err *e)
{
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_thread_state *t = &ps->threads[i];
		uint64_t pc = arch_pc((const struct arch_gpregs *)(const void *)t->gpregs);
		uint64_t off = pc - vp->old_start;

		if (pc < vp->old_start || off >= vp->len)
			continue;
		for (size_t k = 0; k < vp->npatch; k++)
			if (off >= vp->patch[k].off && off < vp->patch[k].off + patch_need(&vp->patch[k]))
				return ibcr_fail(e, "thread %d was at the entry of %s in the "
						 "[vdso] at the checkpoint, which another kernel "
						 "cannot resume; checkpoint it again",
						 t->rec.tid, vp->patch[k].name);
		if (t->rec.syscall_nr < 0)
			return ibcr_fail(e, "thread %d was running [vdso] code at the "
					 "checkpoint, which reads the saving kernel's data; "
					 "another kernel cannot resume it: checkpoint it again",
					 t->rec.tid);
	}
	return 0;
}

/* The saved [vdso]'s bytes, which must be the image's VDSO section. */
static int load_saved(struct vdso_proxy *vp, uint8_t *bytes, uint64_t len,
		      const struct ibcr_vma *v, struct ibcr_err *e)
{
	vp->bytes = bytes;
	vp->len = len;
	if (!vp->bytes)
		return ibcr_fail(e, "the image comes from another kernel ([vdso] differs from "
				 "this kernel's), and its saver kept no copy of that [vdso] to "
				 "redirect: restore it on the kernel it was made on");
	if (vp->len != v->end - v->start || crc32c(0, vp->bytes, vp->len) != v->file_ino)
		return ibcr_fail(e, "the image's saved [vdso] does not match the process's "
				 "[vdso] region %#llx-%#llx", (unsigned long long)v->start,
				 (unsigned long long)v->end);
	vp->old_start = v->start;
	return 0;
}

/* This kernel's set, as one block; its [vdso] must be there. */
static int current_set(struct vdso_proxy *vp, const struct maps_entry *m, size_t n,
		       const struct maps_entry **vdso, struct ibcr_err *e)
{
	*vdso = find_special(m, n, "[vdso]");
	vp->lo = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (!is_kernel_special(m[i].path))
			continue;
		vp->lo = m[i].start < vp->lo ? m[i].start : vp->lo;
		vp->hi = m[i].end > vp->hi ? m[i].end : vp->hi;
		vp->park += m[i].end - m[i].start;
	}
	if (!*vdso && vp->bytes)
		return ibcr_fail(e, "the image comes from a kernel with a [vdso], this kernel "
				 "maps none (vdso=0?): its cached entry points would lead nowhere");
	vp->vdso_off = *vdso ? (*vdso)->start - vp->lo : 0;
	if (vp->lo == UINT64_MAX)
		vp->lo = vp->hi = 0;
	return 0;
}

static int prepare_proxy(struct restore *rs, const struct maps_entry *m, size_t n,
			 uint8_t *bytes, uint64_t len, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct vdso_proxy *vp = xcalloc(1, sizeof(*vp));
	const struct maps_entry *cur = NULL;
	int rc = 0, had = 0;

	rs->vdso = vp;
	for (uint32_t i = 0; i < ps->nvmas && !rc; i++)
		if (ps->vmas[i].kind == IBCR_VMA_SPECIAL && !strcmp(ps->vma_names[i], "[vdso]")) {
			rc = load_saved(vp, bytes, len, &ps->vmas[i], e);
			had = 1;
		}
	if (!had)
		free(bytes);	/* the process had no vdso: nothing to redirect */
	if (!rc)
		rc = current_set(vp, m, n, &cur, e);
	if (!rc && vp->bytes)
		rc = plan_patches(vp, cur, e);
	if (!rc && vp->bytes)
		rc = check_threads(vp, ps, e);
	return rc;
}

int vdso_preflight(struct restore *rs, struct ibcr_err *e)
{
	struct maps_entry *m;
	uint8_t *bytes;
	uint64_t len;
	size_t n;
	int rc = 0;

	/* read (its CRC checked) even when not needed: every section is */
	if (imgr_load_vdso(rs->r, &bytes, &len, e))
		return -1;
	if (maps_read(0, 0, &m, &n, e)) {
		free(bytes);
		return -1;
	}
	if (proxy_forced() || !same_kernel(rs->ps, m, n))
		rc = prepare_proxy(rs, m, n, bytes, len, e);
	else
		free(bytes);
	maps_free(m, n);
	return rc;
}

size_t vdso_plan_size(const struct restore *rs)
{
	return rs->vdso ? rs->vdso->len + 64 : 0;
}

size_t vdso_park_size(const struct restore *rs)
{
	return rs->vdso ? rs->vdso->park : 0;
}

/*
 * Where this kernel's set goes: free in the saved layout (the old [vvar]
 * pages are not restored, the old [vdso] is the proxy), clear of the
 * hole and of the shared objects the loader holds, and of every stack's
 * guard gap, its [vdso] as near the old one as fits.
 */
static int place(const struct plan *p, const struct restore *rs, uint64_t *base,
		 struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	const struct vdso_proxy *vp = rs->vdso;
	struct plan_range *busy = xmalloc(sizeof(*busy) * (ps->nvmas + rs->nshm + 2));
	size_t nb = 0;
	int rc;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];

		if (v->kind == IBCR_VMA_SPECIAL && strcmp(ps->vma_names[i], "[vdso]"))
			continue;
		busy[nb++] = (struct plan_range){
			(v->flags & IBCR_VMAF_GROWSDOWN) && v->start > MARGIN ?
			v->start - MARGIN : v->start, v->end };
	}
	busy[nb++] = (struct plan_range){ p->hole_start, p->hole_start + p->hole_len };
	for (uint32_t i = 0; i < rs->nshm; i++)
		busy[nb++] = (struct plan_range){ rs->shm[i].addr,
						  rs->shm[i].addr + rs->shm[i].size };
	rc = find_free_near(busy, nb, vp->hi - vp->lo, vp->vdso_off,
			    vp->bytes ? vp->old_start : p->hole_start, LOWEST, ARCH_TASK_TOP,
			    base);
	free(busy);
	if (rc)
		return ibcr_fail(e, "no free place of %llu bytes for this kernel's vdso",
				 (unsigned long long)(vp->hi - vp->lo));
	return 0;
}

/* The saved bytes, each entry point made a jump to its twin or its stand-in. */
static int build_proxy(const struct vdso_proxy *vp, uint8_t *out, uint64_t base,
		       struct ibcr_err *e)
{
	memcpy(out, vp->bytes, vp->len);
	for (size_t k = 0; k < vp->npatch; k++) {
		const struct vdso_patch *pt = &vp->patch[k];
		uint64_t pc = vp->old_start + pt->off;
		size_t done = pt->stub == VDSO_STUB_NONE ?
			arch_vdso_jump(out + pt->off, pc, base + vp->vdso_off + pt->to_off,
				       pt->room) :
			arch_vdso_stub(out + pt->off, pt->stub, pt->nr, pt->room);

		if (!done)
			return ibcr_fail(e, "vdso proxy: no room to redirect %s", pt->name);
	}
	return 0;
}

int vdso_plan(struct plan *p, const struct restore *rs, uint8_t *proxy, uint64_t park,
	      struct ibcr_err *e)
{
	const struct vdso_proxy *vp = rs->vdso;
	struct maps_entry *m;
	uint64_t base = 0;
	size_t n;

	if (place(p, rs, &base, e) || maps_read(0, 0, &m, &n, e))
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct plan_special *s;

		if (!is_kernel_special(m[i].path))
			continue;
		s = &p->special[p->nspecial++];
		s->cur = m[i].start;
		s->len = m[i].end - m[i].start;
		s->park = park;
		s->target = base + (m[i].start - vp->lo);
		park += s->len;
	}
	maps_free(m, n);
	if (!vp->bytes)
		return 0;
	if (build_proxy(vp, proxy, base, e))
		return -1;
	p->proxy = proxy;
	p->proxy_addr = vp->old_start;
	p->proxy_len = vp->len;
	if (trace_on())	/* an ST_TRACE line: fd 2 may be the program's by now */
		dprintf(rs->status_fd, "%cvdso proxy: %zu entry points of the [vdso] at %#llx "
			"lead to this kernel's, placed at %#llx\n", ST_TRACE, vp->npatch,
			(unsigned long long)vp->old_start,
			(unsigned long long)(base + vp->vdso_off));
	return 0;
}
