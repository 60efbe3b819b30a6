// SPDX-License-Identifier: MIT
/*
 * Unit tests of what makes images portable: SHA-256 (FIPS 180-4 vectors,
 * whole and in odd pieces, so both the hardware and the buffered paths
 * are held to them), the ELF reader the vdso proxy and the build-id use
 * (on this test's own executable), and the BACKING table's round trip (an image
 * of it alone: the reader judges sections, not whether processes are there).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "elfsym.h"
#include "image_io.h"
#include "sha256.h"

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha256_vectors(void **state)
{
	static const char *abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	static const char *empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	static const char *two = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
	static const char *million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	uint8_t d[32], *a = malloc(1000000);
	char h[65];
	struct sha256 s;

	(void)state;
	sha256("abc", 3, d);
	hex(d, h);
	assert_string_equal(h, abc);
	sha256("", 0, d);
	hex(d, h);
	assert_string_equal(h, empty);
	sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	hex(d, h);
	assert_string_equal(h, two);
	memset(a, 'a', 1000000);
	sha256(a, 1000000, d);
	hex(d, h);
	assert_string_equal(h, million);
	/* the same bytes in pieces of 1, 63, 64, 65 and 4097 bytes */
	sha256_init(&s);
	for (size_t off = 0, k = 0; off < 1000000; k++) {
		static const size_t piece[] = { 1, 63, 64, 65, 4097 };
		size_t n = piece[k % 5] < 1000000 - off ? piece[k % 5] : 1000000 - off;

		sha256_update(&s, a + off, n);
		off += n;
	}
	sha256_final(&s, d);
	hex(d, h);
	assert_string_equal(h, million);
	free(a);
}

/* The size of this process's [vdso], from its maps. */
static size_t vdso_size(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;
	size_t size = 0;

	while (m && fgets(line, sizeof(line), m))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			size = hi - lo;
	if (m)
		fclose(m);
	return size;
}

/* The vdso's functions, as the proxy reads them; this file's build-id. */
static void elf_reader(void **state)
{
	const uint8_t *vdso = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	struct elf_func *f = NULL;
	size_t n = 0, len = 0;
	uint8_t id[32], *self;
	int fd, found = 0;

	(void)state;
	assert_non_null(vdso);
	assert_int_equal(elf_funcs_mem(vdso, vdso_size(), &f, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= strstr(f[i].name, "clock_gettime") && f[i].size > 16;
	assert_true(found);
	free(f);
	assert_int_equal(elf_funcs_mem((const uint8_t *)"not an ELF file", 15, &f, &n), -1);
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	self = mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(self != MAP_FAILED);
	assert_int_equal(elf_build_id_mem(self, 65536, id, sizeof(id), &len), 0);
	assert_in_range(len, 8, 32);
	munmap(self, 65536);
}

static void backing_round_trip(void **state)
{
	char path[] = "/tmp/ibcr-test-port.XXXXXX";
	struct ibcr_backing f = { .ino = 42, .dev = 7, .size = 12345, .mtime_ns = 1, .ctime_ns = 2,
				  .mode = 0100755, .flags = IBCR_BACKF_SHA256 | IBCR_BACKF_MAPPED };
	char *names[] = { "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	struct ibcr_backings in = { 1, &f, names, 0, 0, 0, NULL }, out;
	struct img_writer w;
	struct img_reader r;
	struct ibcr_err e = { "" };
	struct buf b = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	memset(f.sha256, 0xab, sizeof(f.sha256));
	enc_backing(&b, &in);
	assert_int_equal(imgw_open(&w, path, ibcr_host_arch(), 1, 0, &e), 0);
	assert_int_equal(imgw_section(&w, IBCR_SEC_BACKING, IBCR_PROC_NONE, NULL, b.p, b.len, &e), 0);
	assert_int_equal(imgw_commit(&w, &e), 0);
	assert_int_equal(imgr_open(&r, path, &e), 0);
	assert_int_equal(imgr_load_backing(&r, &out, &e), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.paths[0], names[0]);
	assert_memory_equal(&out.f[0].sha256, f.sha256, 32);
	assert_int_equal(out.f[0].ctime_ns, 2);
	ibcr_backings_free(&out);
	imgr_close(&r);
	unlink(path);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_vectors),
		cmocka_unit_test(elf_reader),
		cmocka_unit_test(backing_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
