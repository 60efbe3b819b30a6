// SPDX-License-Identifier: MIT
/*
 * Unit tests of the image format: round trip of every record, and that
 * each kind of damage (truncation, any flipped byte, a newer version,
 * another architecture) is refused with a message naming what is wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "fobj.h"
#include "rt/crc32c.h"
#include "rt/xxh64.h"
#include "rt/fmt.h"
#include "image_io.h"

static char path[256];
static const uint64_t PG = 4096;

static void crc_vectors(void **state)
{
	uint8_t zeros[32] = { 0 };

	(void)state;
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c(0, zeros, 32), 0x8a9136aa);
	/* continuing over a split gives the same result */
	assert_int_equal(crc32c(crc32c(0, "12345", 5), "6789", 4), 0xe3069283);
}

/* The xxHash reference values, and page sums that do not see the splits. */
static void xxh64_vectors(void **state)
{
	static uint8_t pages[3 * 4096];
	const char *s = "Nobody inspects the spammish repetition";

	(void)state;
	assert_true(xxh64("", 0, 0) == 0xef46db3751d8e999ull);
	assert_true(xxh64("abc", 3, 0) == 0x44bc2cf5ad770999ull);
	assert_true(xxh64(s, strlen(s), 0) == 0xfbcea83c8a378bf1ull);
	for (size_t i = 0; i < sizeof(pages); i++)
		pages[i] = (uint8_t)(i * 7);
	/* parts summed in any order, continued or added, give the whole's */
	assert_int_equal(page_sum(page_sum(0, pages, PG, PG, 0), pages + PG, 2 * PG, PG, 1),
			 page_sum(0, pages, 3 * PG, PG, 0));
	assert_int_equal(page_sum(0, pages + 2 * PG, PG, PG, 2) + page_sum(0, pages, 2 * PG, PG, 0),
			 page_sum(0, pages, 3 * PG, PG, 0));
	assert_int_equal(page_sum(0, pages, 2 * PG, PG, 0),
			 (uint32_t)xxh64(pages, PG, 0) + (uint32_t)xxh64(pages + PG, PG, 1));
	/* a page in another place is another term */
	assert_int_not_equal(page_sum(0, pages, PG, PG, 0), page_sum(0, pages, PG, PG, 1));
	assert_int_not_equal(page_sum(0, pages, 3 * PG, PG, 0), block_sum(pages, 3 * PG));
}

/* A small but complete process: 2 threads, 3 regions, 1 file, 2 runs. */
static void fill_process(struct ibcr_process_state *ps)
{
	static uint8_t gp[2][216], fp[2][832], si[128];
	static struct ibcr_thread_state th[2];
	static struct ibcr_vma vmas[3];
	static char *names[3] = { "[heap]", "/usr/lib/libc.so", "[vdso]" };
	static struct ibcr_run runs[2] = { { 0x10000, 2 }, { 0x13000, 1 } };
	static struct ibcr_fd fds[1] = { { .fd = 3, .obj = 0 } };
	static struct ibcr_creds creds[2];
	static uint32_t groups[3] = { 4, 24, 27 };
	static struct ibcr_seccomp_filter filter = { 0, 2, 0, 1 };
	static uint64_t insn = 0x7fff000000000006ull;	/* ret ALLOW */

	memset(ps, 0, sizeof(*ps));
	ps->rec.pid = 4242;
	ps->rec.nthreads = 2;
	ps->rec.brk = 0x123000;
	strcpy(ps->rec.comm, "demo");
	ps->exe = "/bin/demo";
	ps->cwd = "/tmp";
	ps->cmdline = "demo\0-x";
	ps->rec.cmdline_len = 8;
	for (int i = 0; i < 2; i++) {
		memset(gp[i], 0x10 + i, sizeof(gp[i]));
		memset(fp[i], 0x20 + i, sizeof(fp[i]));
		th[i].rec.tid = 4242 + i;
		th[i].rec.gpregs_size = sizeof(gp[i]);
		th[i].rec.fpregs_size = sizeof(fp[i]);
		th[i].gpregs = gp[i];
		th[i].fpregs = fp[i];
		th[i].siginfo = si;
	}
	th[1].rec.nsiginfo = 1;
	memset(si, 0x5a, sizeof(si));
	ps->threads = th;
	ps->sigact[9].handler = 0xdeadbeef;
	vmas[0] = (struct ibcr_vma){ .start = 0x10000, .end = 0x14000, .prot = 3,
				     .kind = IBCR_VMA_ANON, .run0 = 0, .nruns = 2 };
	vmas[1] = (struct ibcr_vma){ .start = 0x20000, .end = 0x30000, .prot = 5,
				     .kind = IBCR_VMA_FILE, .file_size = 99 };
	vmas[2] = (struct ibcr_vma){ .start = 0x40000, .end = 0x42000, .prot = 5,
				     .kind = IBCR_VMA_SPECIAL };
	ps->nvmas = 3;
	ps->vmas = vmas;
	ps->vma_names = names;
	ps->nruns = 2;
	ps->runs = runs;
	ps->nfds = 1;
	ps->fds = fds;
	creds[0] = (struct ibcr_creds){ .uid = { 1, 2, 3, 4 }, .cap_prm = 0x21, .cap_eff = 1,
					.group0 = 0, .ngroups = 3, .loginuid = 42 };
	creds[1] = creds[0];
	creds[1].seccomp = IBCR_SECCOMP_FILTER;
	creds[1].filter = 1;
	creds[1].flags = IBCR_CREDF_NO_NEW_PRIVS;
	ps->priv = (struct ibcr_priv){ .hdr = { .nthreads = 2, .ngroups = 3, .dumpable = 1 },
				       .creds = creds, .groups = groups, .root = "/jail",
				       .nfilters = 1, .ninsns = 1, .filters = &filter,
				       .insns = &insn };
}

/* One regular file at offset 77 and a pipe end holding 3 bytes. */
static void fill_files(struct ibcr_files *f)
{
	static struct ibcr_fobj objs[2] = {
		{ .kind = IBCR_FD_REG, .pos = 77 },
		{ .kind = IBCR_FD_PIPE, .flags = 0, .data_len = 3, .aux = { 4242 } },
	};
	static char *paths[2] = { "/etc/hostname", "pipe:[4242]" };
	static uint8_t abc[3] = { 'a', 'b', 'c' };
	static uint8_t *data[2] = { NULL, abc };

	f->nobjs = 2;
	f->objs = objs;
	f->paths = paths;
	f->data = data;
}

/*
 * The test image, with `npages` pages in region 0 (3 in fill_process's),
 * written with imgw_open's `flags`; returns the bytes written directly.
 */
static uint64_t write_image_with(unsigned flags, uint64_t npages)
{
	struct ibcr_process_state ps;
	struct ibcr_files files;
	struct img_writer w;
	struct ibcr_err e;
	struct buf b = { 0 };
	uint8_t page[4096];

	fill_process(&ps);
	/* runs of npages - 1 pages and of 1, with a hole of one between */
	ps.vmas[0].end = 0x10000 + (npages + 1) * PG;
	ps.runs[0].npages = npages - 1;
	ps.runs[1].addr = 0x10000 + npages * PG;
	for (uint32_t i = 1; npages > 3 && i < ps.nvmas; i++) {	/* after it */
		ps.vmas[i].start += npages * PG;
		ps.vmas[i].end += npages * PG;
	}
	fill_files(&files);
	assert_int_equal(imgw_open(&w, path, ibcr_host_arch(), 1, flags, &e), 0);
	enc_fileobjs(&b, &files);
	assert_int_equal(imgw_section(&w, IBCR_SEC_FILEOBJS, IBCR_PROC_NONE, NULL, b.p,
				      b.len, &e), 0);
	b.len = 0;
	enc_proc(&b, &ps);
	assert_int_equal(imgw_section(&w, IBCR_SEC_PROC, 0, NULL, b.p, b.len, &e), 0);
	for (int i = 0; i < 2; i++) {
		b.len = 0;
		enc_thread(&b, &ps.threads[i]);
		assert_int_equal(imgw_section(&w, IBCR_SEC_THREAD, 0, NULL, b.p, b.len, &e), 0);
	}
	assert_int_equal(imgw_section(&w, IBCR_SEC_SIGACT, 0, NULL, ps.sigact,
				      sizeof(ps.sigact), &e), 0);
	b.len = 0;
	enc_creds(&b, &ps.priv);
	assert_int_equal(imgw_section(&w, IBCR_SEC_CREDS, 0, NULL, b.p, b.len, &e), 0);
	b.len = 0;
	enc_seccomp(&b, &ps.priv);
	assert_int_equal(imgw_section(&w, IBCR_SEC_SECCOMP, 0, NULL, b.p, b.len, &e), 0);
	b.len = 0;
	enc_files(&b, &ps);
	assert_int_equal(imgw_section(&w, IBCR_SEC_FILES, 0, NULL, b.p, b.len, &e), 0);
	assert_int_equal(imgw_begin(&w, IBCR_SEC_PAGES, 0, IBCR_SECF_CRC_PER_REGION,
				    (uint32_t)PG, &e), 0);
	ps.vmas[0].data_off = imgw_payload_pos(&w);
	for (uint64_t i = 0; i < npages; i++) {
		memset(page, 'a' + (int)(i % 26), sizeof(page));
		assert_int_equal(imgw_data(&w, page, sizeof(page), &e), 0);
		ps.vmas[0].data_crc = page_sum(ps.vmas[0].data_crc, page, sizeof(page), PG, i);
	}
	ps.vmas[0].data_len = npages * PG;
	assert_int_equal(imgw_end(&w, &e), 0);
	b.len = 0;
	enc_vmas(&b, &ps);
	assert_int_equal(imgw_section(&w, IBCR_SEC_VMAS, 0, NULL, b.p, b.len, &e), 0);
	b.len = 0;
	assert_int_equal(imgw_commit(&w, &e), 0);
	buf_free(&b);
	return w.direct_bytes;
}

static void write_test_image(void)
{
	write_image_with(0, 3);
}

static int setup(void **state)
{
	(void)state;
	const char *dir = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/ibcr-unit-%d.ckpt", dir && *dir ? dir : "/tmp",
		 (int)getpid());
	write_test_image();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void round_trip(void **state)
{
	struct img_reader r;
	struct ibcr_process_state ps;
	struct ibcr_files files;
	struct ibcr_err e;

	(void)state;
	assert_int_equal(imgr_open(&r, path, &e), 0);
	assert_int_equal(imgr_load_process(&r, 0, &ps, &e), 0);
	assert_int_equal(ps.rec.pid, 4242);
	assert_int_equal(ps.rec.brk, 0x123000);
	assert_string_equal(ps.exe, "/bin/demo");
	assert_string_equal(ps.cwd, "/tmp");
	assert_memory_equal(ps.cmdline, "demo\0-x", 8);
	assert_int_equal(ps.threads[1].rec.tid, 4243);
	assert_int_equal(ps.threads[1].gpregs[5], 0x11);
	assert_int_equal(ps.threads[1].fpregs[831], 0x21);
	assert_int_equal(ps.threads[1].rec.nsiginfo, 1);
	assert_int_equal(ps.threads[1].siginfo[127], 0x5a);
	assert_int_equal(ps.sigact[9].handler, 0xdeadbeef);
	assert_int_equal(ps.nvmas, 3);
	assert_string_equal(ps.vma_names[1], "/usr/lib/libc.so");
	assert_int_equal(ps.runs[1].addr, 0x13000);
	assert_int_equal(ps.priv.hdr.nthreads, 2);
	assert_int_equal(ps.priv.creds[1].uid[3], 4);
	assert_int_equal(ps.priv.creds[1].cap_prm, 0x21);
	assert_int_equal(ps.priv.groups[ps.priv.creds[1].group0 + 2], 27);
	assert_string_equal(ps.priv.root, "/jail");
	assert_int_equal(ps.priv.creds[1].filter, 1);
	assert_int_equal(ps.priv.filters[0].flags, 2);
	assert_int_equal(ps.priv.insns[0], 0x7fff000000000006ull);
	assert_int_equal(imgr_load_files(&r, &files, &e), 0);
	assert_int_equal(ibcr_check_fds(&ps, &files, &e), 0);
	assert_int_equal(ps.fds[0].fd, 3);
	assert_int_equal(files.nobjs, 2);
	assert_int_equal(files.objs[ps.fds[0].obj].pos, 77);
	assert_string_equal(files.paths[ps.fds[0].obj], "/etc/hostname");
	assert_int_equal(files.objs[1].data_len, 3);
	assert_memory_equal(files.data[1], "abc", 3);
	assert_int_equal(fobj_pipe_ino(&files.objs[1]), 4242);
	ibcr_files_free(&files);
	assert_int_equal(ps.pages_off % PG, 0);
	assert_int_equal(imgr_verify_pages(&r, &ps, &e), 0);
	ibcr_process_free(&ps);
	imgr_close(&r);
}

/* Opens the (damaged) copy and loads and verifies everything in it. */
static int check_copy(const char *copy, struct ibcr_err *e)
{
	struct img_reader r;
	struct ibcr_process_state ps;
	int rc;

	struct ibcr_files files;

	if (imgr_open(&r, copy, e))
		return -1;
	rc = imgr_load_files(&r, &files, e);
	if (rc) {
		imgr_close(&r);
		return rc;
	}
	ibcr_files_free(&files);
	rc = imgr_load_process(&r, 0, &ps, e);
	if (!rc) {
		rc = imgr_verify_pages(&r, &ps, e);
		ibcr_process_free(&ps);
	}
	imgr_close(&r);
	return rc;
}

static uint8_t *slurp(size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	rewind(f);
	p = malloc(*n);
	assert_int_equal(fread(p, 1, *n, f), *n);
	fclose(f);
	return p;
}

static void spit(const char *copy, const uint8_t *p, size_t n)
{
	FILE *f = fopen(copy, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* Every truncation point is detected, and called a truncation. */
static void truncated(void **state)
{
	char copy[300];
	size_t n;
	uint8_t *p = slurp(&n);
	struct ibcr_err e;

	(void)state;
	snprintf(copy, sizeof(copy), "%s.trunc", path);
	for (size_t len = 0; len < n; len += (len < 8192 ? 1 : 509)) {
		spit(copy, p, len);
		assert_int_not_equal(check_copy(copy, &e), 0);
		if (len >= sizeof(struct ibcr_file_hdr) && !strstr(e.msg, "truncated")) {
			fail_msg("length %zu: '%s' does not say truncated", len, e.msg);
		}
	}
	unlink(copy);
	free(p);
}

/* Flipping any single byte is caught; page data errors name the region. */
static void flipped(void **state)
{
	char copy[300];
	size_t n;
	uint8_t *p = slurp(&n);
	struct ibcr_err e;
	size_t caught = 0, in_pages = 0;

	(void)state;
	snprintf(copy, sizeof(copy), "%s.flip", path);
	for (size_t i = 0; i < n; i++) {
		p[i] ^= 0x40;
		spit(copy, p, n);
		if (check_copy(copy, &e) != 0)
			caught++;
		else
			fail_msg("flipping byte %zu went unnoticed", i);
		if (strstr(e.msg, "region 0x10000-0x14000"))
			in_pages++;
		p[i] ^= 0x40;
	}
	assert_int_equal(caught, n);
	assert_int_equal(in_pages, 3 * PG);
	unlink(copy);
	free(p);
}

static void rewrite_header(uint8_t *p, uint32_t version, uint32_t arch)
{
	struct ibcr_file_hdr h;

	memcpy(&h, p, sizeof(h));
	h.version = version;
	h.arch = arch;
	h.crc = crc32c(0, &h, offsetof(struct ibcr_file_hdr, crc));
	memcpy(p, &h, sizeof(h));
}

static void newer_version_and_other_arch(void **state)
{
	char copy[300];
	size_t n;
	uint8_t *p = slurp(&n);
	struct img_reader r;
	struct ibcr_err e;

	(void)state;
	snprintf(copy, sizeof(copy), "%s.ver", path);
	rewrite_header(p, IBCR_VERSION + 1, ibcr_host_arch());
	spit(copy, p, n);
	assert_int_not_equal(imgr_open(&r, copy, &e), 0);
	assert_non_null(strstr(e.msg, "newer"));
	/* another architecture still opens: the loader is the one to refuse */
	rewrite_header(p, IBCR_VERSION, IBCR_ARCH_AARCH64 + IBCR_ARCH_X86_64 - ibcr_host_arch());
	spit(copy, p, n);
	assert_int_equal(imgr_open(&r, copy, &e), 0);
	assert_int_not_equal(r.hdr.arch, ibcr_host_arch());
	imgr_close(&r);
	unlink(copy);
	free(p);
}

/* Whether the file system of `path` takes direct I/O at all. */
static int fs_takes_direct(void)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);

	if (fd >= 0)
		close(fd);
	unlink(path);
	return fd >= 0;
}

/*
 * Direct I/O: whole 1 MiB buffers go past the page cache, the tail and
 * the streamed section's header after them through it; on a file system
 * without direct I/O (tmpfs before Linux 6.6: the arm64 guest's /tmp)
 * everything goes through the cache. Either way the image reads back
 * whole and is byte for byte the one written through the cache.
 */
static void direct_round_trip(void **state)
{
	struct ibcr_err e;
	struct stat st;
	uint64_t direct, want;
	size_t n1, n2;
	uint8_t *a, *b;
	int takes = fs_takes_direct();

	(void)state;
	direct = write_image_with(IMGW_DIRECT, 1000);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 1000 * 4096);
	want = takes ? (uint64_t)st.st_size & ~((1ull << 20) - 1) : 0;
	assert_int_equal(direct, want);
	if (check_copy(path, &e))
		fail_msg("%s", e.msg);
	a = slurp(&n1);
	write_image_with(0, 1000);
	b = slurp(&n2);
	assert_int_equal(n1, n2);
	/* the header's creation time differs; nothing after it may */
	assert_memory_equal(a + sizeof(struct ibcr_file_hdr), b + sizeof(struct ibcr_file_hdr),
			    n1 - sizeof(struct ibcr_file_hdr));
	free(a);
	free(b);
}

static void abort_leaves_nothing(void **state)
{
	char out[300], tmp[340];
	struct img_writer w;
	struct ibcr_err e;
	struct stat st;

	(void)state;
	snprintf(out, sizeof(out), "%s.aborted", path);
	assert_int_equal(imgw_open(&w, out, ibcr_host_arch(), 1, 0, &e), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out, (int)getpid());
	assert_int_equal(stat(tmp, &st), 0);	/* written under a temporary name */
	assert_int_not_equal(stat(out, &st), 0);
	imgw_abort(&w);
	assert_int_not_equal(stat(tmp, &st), 0);
	assert_int_not_equal(stat(out, &st), 0);
}

static void formatter(void **state)
{
	char b[64];

	(void)state;
	fmt(b, sizeof(b), "r %#lx-%#lx (%s) %d %u%%", 0x1000ul, 0x2000ul, "x", -5, 7u);
	assert_string_equal(b, "r 0x1000-0x2000 (x) -5 7%");
	fmt(b, 8, "%s", "truncated here");
	assert_string_equal(b, "truncat");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_vectors),
		cmocka_unit_test(xxh64_vectors),
		cmocka_unit_test(formatter),
		cmocka_unit_test_setup_teardown(round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(flipped, setup, teardown),
		cmocka_unit_test_setup_teardown(newer_version_and_other_arch, setup, teardown),
		cmocka_unit_test_setup_teardown(direct_round_trip, setup, teardown),
		cmocka_unit_test(abort_leaves_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
