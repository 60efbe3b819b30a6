// SPDX-License-Identifier: MIT
/*
 * Reads and damages ibcr images for the integration tests. A C program
 * of ours rather than a script, so that the same tests run where there is
 * no python3 (the arm64 guest has only busybox); the layouts are those of
 * lib/image.h, included as is.
 *
 *   imgtool sections IMAGE          one line per section:
 *                                   INDEX TYPE PROC OFFSET PAYLOAD SIZE
 *   imgtool flip IMAGE TYPE         flips one byte in the middle of the
 *                                   payload of the first TYPE section
 *   imgtool flip-region IMAGE [PCT] flips one byte in the page data of the
 *                                   region with the most data, PCT percent
 *                                   into it (default 50); prints that
 *                                   region as START-END (0x..., as the
 *                                   loader names regions)
 *   imgtool set-header IMAGE FIELD VALUE
 *                                   sets a u32 header field (version, arch,
 *                                   page_size, flags, nprocs, hdr_size) and
 *                                   recomputes the header CRC-32C, so only
 *                                   the field's meaning can make a reader
 *                                   refuse it
 *   imgtool xstate IMAGE COMM       x86_64: the XSAVE header of thread
 *                                   COMM: sw-bytes and xstate_bv
 *   imgtool syscall IMAGE COMM      the system call thread COMM was in, or
 *                                   had just returned from, when stopped
 *                                   (x86_64: orig_rax; aarch64: x8, which
 *                                   may be stale), -1 for none
 *   imgtool set-oom IMAGE VALUE     sets oom_score_adj in the first PATTRS
 *                                   section and recomputes its CRCs: a
 *                                   value the restorer may not set
 *   imgtool vdso-rename IMAGE FROM TO
 *                                   replaces every FROM in the saved
 *                                   [vdso] (VDSO section) by TO, of the
 *                                   same length (a symbol renamed), and
 *                                   makes every CRC that covers it right
 *   imgtool cached IMAGE            how many bytes of IMAGE are in the
 *                                   page cache (mincore), without reading
 *                                   it: did the saver write past it?
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/image.h"

static const char *prog_image;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "imgtool: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return crc ^ 0xffffffffu;
}

static const struct {
	uint32_t type;
	const char *name;
} types[] = {
	{ IBCR_SEC_PROC, "PROC" },	   { IBCR_SEC_THREAD, "THREAD" },
	{ IBCR_SEC_SIGACT, "SIGACT" },	   { IBCR_SEC_FILES, "FILES" },
	{ IBCR_SEC_PAGES, "PAGES" },	   { IBCR_SEC_VMAS, "VMAS" },
	{ IBCR_SEC_OPAQUE, "OPAQUE" },	   { IBCR_SEC_FILEOBJS, "FILEOBJS" },
	{ IBCR_SEC_SYSVSHM, "SYSVSHM" },   { IBCR_SEC_SYSVSEM, "SYSVSEM" },
	{ IBCR_SEC_SYSVMSG, "SYSVMSG" },   { IBCR_SEC_CREDS, "CREDS" },
	{ IBCR_SEC_SECCOMP, "SECCOMP" },   { IBCR_SEC_PATTRS, "PATTRS" },
	{ IBCR_SEC_TATTRS, "TATTRS" },	   { IBCR_SEC_FILEDATA, "FILEDATA" },
	{ IBCR_SEC_FILEATTRS, "FILEATTRS" }, { IBCR_SEC_VDSO, "VDSO" },
	{ IBCR_SEC_BACKING, "BACKING" },   { IBCR_SEC_COW, "COW" },
	{ IBCR_SEC_PAGESUMS, "PAGESUMS" }, { IBCR_SEC_PTIMERS, "PTIMERS" },
	{ IBCR_SEC_SOCKOPTS, "SOCKOPTS" }, { IBCR_SEC_NETLOCK, "NETLOCK" },
	{ IBCR_SEC_END, "END" },
};

static const char *type_name(uint32_t type, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	snprintf(buf, size, "%u", type);
	return buf;
}

static uint8_t *img;
static size_t img_len;

static void load(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 20, n;

	if (!f)
		die("%s: %s", path, strerror(errno));
	img = malloc(cap);
	while (img && (n = fread(img + img_len, 1, cap - img_len, f)) > 0) {
		img_len += n;
		if (img_len == cap)
			img = realloc(img, cap *= 2);
	}
	if (!img || ferror(f))
		die("%s: cannot read", path);
	fclose(f);
	prog_image = path;
}

static void store(void)
{
	FILE *f = fopen(prog_image, "wb");

	if (!f || fwrite(img, 1, img_len, f) != img_len || fclose(f))
		die("%s: cannot write: %s", prog_image, strerror(errno));
}

/* Bounds-checked access to the image. */
static void *at(uint64_t off, uint64_t len)
{
	if (off > img_len || len > img_len - off)
		die("%s: %llu bytes at offset %llu lie beyond its end (%zu bytes)", prog_image,
		    (unsigned long long)len, (unsigned long long)off, img_len);
	return img + off;
}

struct sec {
	uint32_t type, proc;
	uint64_t off, payload, size;
};

/* Every section up to END; returns how many. */
static size_t sections(struct sec **out)
{
	size_t n = 0, cap = 64;
	uint64_t off = sizeof(struct ibcr_file_hdr);
	struct sec *s = malloc(cap * sizeof(*s));

	for (;;) {
		struct ibcr_sec_hdr h;

		off = (off + 7) & ~7ull;
		memcpy(&h, at(off, sizeof(h)), sizeof(h));
		if (h.magic != IBCR_SEC_MAGIC)
			die("no section header at offset %llu", (unsigned long long)off);
		if (n == cap)
			s = realloc(s, (cap *= 2) * sizeof(*s));
		s[n] = (struct sec){ h.type, h.proc, off, off + sizeof(h) + h.pad, h.size };
		at(s[n].payload, s[n].size);
		off = s[n].payload + s[n].size;
		if (s[n++].type == IBCR_SEC_END)
			break;
	}
	*out = s;
	return n;
}

static const struct sec *first(uint32_t type)
{
	struct sec *s;
	size_t n = sections(&s);
	char buf[16];

	for (size_t i = 0; i < n; i++)
		if (s[i].type == type)
			return &s[i];
	die("no %s section", type_name(type, buf, sizeof(buf)));
}

static uint32_t type_of(const char *name)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(types[i].name, name))
			return types[i].type;
	die("unknown section type %s", name);
}

/* The THREAD record of the thread named comm, checked against its size;
 * NULL when no thread has that name. */
static const struct ibcr_thread *thread_named(const char *comm, uint64_t *payload)
{
	struct sec *s;
	size_t n = sections(&s);

	for (size_t i = 0; i < n; i++) {
		struct ibcr_thread t;
		uint64_t want;

		if (s[i].type != IBCR_SEC_THREAD)
			continue;
		memcpy(&t, at(s[i].payload, sizeof(t)), sizeof(t));
		want = sizeof(t) + (uint64_t)t.gpregs_size + t.fpregs_size +
		       (uint64_t)IBCR_SIGINFO_SIZE * (t.nsiginfo + t.nsiginfo_shared);
		if (want != s[i].size)
			die("THREAD section of %d: %llu bytes, its record says %llu", t.tid,
			    (unsigned long long)s[i].size, (unsigned long long)want);
		if (strncmp(t.comm, comm, sizeof(t.comm)))
			continue;
		*payload = s[i].payload;
		return (const struct ibcr_thread *)at(s[i].payload, sizeof(t));
	}
	return NULL;
}

static void cmd_sections(void)
{
	struct sec *s;
	size_t n = sections(&s);
	char buf[16];

	for (size_t i = 0; i < n; i++)
		printf("%zu %s %u %llu %llu %llu\n", i, type_name(s[i].type, buf, sizeof(buf)),
		       s[i].proc, (unsigned long long)s[i].off, (unsigned long long)s[i].payload,
		       (unsigned long long)s[i].size);
}

static void cmd_flip(const char *type)
{
	const struct sec *s = first(type_of(type));

	if (!s->size)
		die("the %s section is empty", type);
	*(uint8_t *)at(s->payload + s->size / 2, 1) ^= 0xff;
	store();
}

static void cmd_flip_region(unsigned pct)
{
	const struct sec *pages = first(IBCR_SEC_PAGES), *vs = first(IBCR_SEC_VMAS);
	struct ibcr_vmas_hdr h;
	struct ibcr_vma best = { 0 };

	memcpy(&h, at(vs->payload, sizeof(h)), sizeof(h));
	if (sizeof(h) + (uint64_t)h.nvmas * sizeof(struct ibcr_vma) +
		    h.nruns * sizeof(struct ibcr_run) + h.strtab_size != vs->size)
		die("VMAS section does not match its layout");
	for (uint32_t k = 0; k < h.nvmas; k++) {
		struct ibcr_vma v;

		memcpy(&v, at(vs->payload + sizeof(h) + k * sizeof(v), sizeof(v)), sizeof(v));
		if (k == 0 || v.data_len > best.data_len)
			best = v;
	}
	if (!best.data_len)
		die("no region has page data");
	*(uint8_t *)at(pages->payload + best.data_off + best.data_len / 100 * pct, 1) ^= 0xff;
	store();
	printf("0x%llx-0x%llx\n", (unsigned long long)best.start, (unsigned long long)best.end);
}

static void cmd_set_header(const char *field, const char *value)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "version", offsetof(struct ibcr_file_hdr, version) },
		{ "arch", offsetof(struct ibcr_file_hdr, arch) },
		{ "page_size", offsetof(struct ibcr_file_hdr, page_size) },
		{ "flags", offsetof(struct ibcr_file_hdr, flags) },
		{ "nprocs", offsetof(struct ibcr_file_hdr, nprocs) },
		{ "hdr_size", offsetof(struct ibcr_file_hdr, hdr_size) },
	};
	uint32_t v = (uint32_t)strtoul(value, NULL, 0), crc;
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(fields[i].name, field))
			break;
	if (i == sizeof(fields) / sizeof(fields[0]))
		die("unknown header field %s", field);
	memcpy(at(fields[i].off, 4), &v, 4);
	crc = crc32c(at(0, offsetof(struct ibcr_file_hdr, crc)),
		     offsetof(struct ibcr_file_hdr, crc));
	memcpy(at(offsetof(struct ibcr_file_hdr, crc), 4), &crc, 4);
	store();
}

/* A section's payload changed in place: its data CRC and header CRC again. */
static void reseal(const struct sec *x)
{
	uint32_t crc = crc32c(at(x->payload, x->size), x->size);

	memcpy(at(x->off + offsetof(struct ibcr_sec_hdr, data_crc), 4), &crc, 4);
	crc = crc32c(at(x->off, offsetof(struct ibcr_sec_hdr, hdr_crc)),
		     offsetof(struct ibcr_sec_hdr, hdr_crc));
	memcpy(at(x->off + offsetof(struct ibcr_sec_hdr, hdr_crc), 4), &crc, 4);
}

static void cmd_set_oom(const char *value)
{
	const struct sec *x = first(IBCR_SEC_PATTRS);
	int32_t v = (int32_t)strtol(value, NULL, 0);

	memcpy(at(x->payload + offsetof(struct ibcr_pattrs, oom_score_adj), 4), &v, 4);
	reseal(x);
	store();
}

/* Every [vdso] region's identity: the CRC-32C of the saved bytes. */
static void set_vdso_ino(uint32_t crc)
{
	struct sec *s;
	size_t n = sections(&s);

	for (size_t i = 0; i < n; i++) {
		struct ibcr_vmas_hdr h;
		uint64_t strtab;

		if (s[i].type != IBCR_SEC_VMAS)
			continue;
		memcpy(&h, at(s[i].payload, sizeof(h)), sizeof(h));
		strtab = s[i].payload + sizeof(h) + h.nvmas * sizeof(struct ibcr_vma) +
			 h.nruns * sizeof(struct ibcr_run);
		for (uint32_t k = 0; k < h.nvmas; k++) {
			uint64_t off = s[i].payload + sizeof(h) + k * sizeof(struct ibcr_vma);
			struct ibcr_vma v;

			memcpy(&v, at(off, sizeof(v)), sizeof(v));
			if (v.kind != IBCR_VMA_SPECIAL ||
			    strcmp((const char *)at(strtab + v.name_off, 7), "[vdso]"))
				continue;
			v.file_ino = crc;
			memcpy(at(off, sizeof(v)), &v, sizeof(v));
		}
		reseal(&s[i]);
	}
}

static void cmd_vdso_rename(const char *from, const char *to)
{
	const struct sec *s = first(IBCR_SEC_VDSO);
	uint8_t *p = at(s->payload, s->size);
	size_t k = strlen(from), hits = 0;

	if (strlen(to) != k || !k)
		die("vdso-rename: %s and %s differ in length", from, to);
	for (uint64_t i = 0; i + k <= s->size; i++)
		if (!memcmp(p + i, from, k)) {
			memcpy(p + i, to, k);
			hits++;
		}
	if (!hits)
		die("vdso-rename: no %s in the saved [vdso]", from);
	reseal(s);
	set_vdso_ino(crc32c(p, s->size));
	store();
}

static void cmd_syscall(const char *comm)
{
	uint32_t arch;
	uint64_t payload;
	const struct ibcr_thread *t;
	int64_t nr;

	memcpy(&arch, at(offsetof(struct ibcr_file_hdr, arch), 4), 4);
	t = thread_named(comm, &payload);
	if (!t)
		die("no thread named %s", comm);
	if (t->syscall_nr >= 0) {		/* rewound to re-execute: the saver knew it */
		nr = t->syscall_nr;
	} else if (arch == IBCR_ARCH_X86_64) {	/* user_regs_struct: orig_rax is word 15 */
		if (t->gpregs_size < 16 * 8)
			die("thread %s: %u bytes of registers", comm, t->gpregs_size);
		memcpy(&nr, at(payload + sizeof(*t) + 15 * 8, 8), 8);
	} else {				/* user_pt_regs: x8 holds the number */
		if (t->gpregs_size < 9 * 8)
			die("thread %s: %u bytes of registers", comm, t->gpregs_size);
		memcpy(&nr, at(payload + sizeof(*t) + 8 * 8, 8), 8);
	}
	printf("%lld\n", (long long)nr);
}

static void cmd_xstate(const char *comm)
{
	uint64_t payload, fp, xfeat, bv, comp;
	const struct ibcr_thread *t = thread_named(comm, &payload);
	uint32_t magic1, ext, xsize;

	if (!t)
		die("no thread named %s", comm);
	if (t->fpregs_size < 528)
		die("thread %s: %u bytes of FP state, not an XSAVE area", comm, t->fpregs_size);
	fp = payload + sizeof(*t) + t->gpregs_size;
	memcpy(&magic1, at(fp + 464, 4), 4);
	memcpy(&ext, at(fp + 468, 4), 4);
	memcpy(&xfeat, at(fp + 472, 8), 8);
	memcpy(&xsize, at(fp + 480, 4), 4);
	memcpy(&bv, at(fp + 512, 8), 8);
	memcpy(&comp, at(fp + 520, 8), 8);
	printf("fpregs_size %u magic1 0x%x extended_size %u xfeatures 0x%llx xstate_size %u "
	       "xstate_bv 0x%llx xcomp_bv 0x%llx\n",
	       t->fpregs_size, magic1, ext, (unsigned long long)xfeat, xsize,
	       (unsigned long long)bv, (unsigned long long)comp);
}

/* Before load(), which would bring the whole file into the cache. */
static void cmd_cached(const char *path)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint64_t n = 0;
	unsigned char *vec;
	void *map;

	if (fd < 0 || fstat(fd, &st))
		die("%s: %s", path, strerror(errno));
	if (!st.st_size) {
		printf("0\n");
		return;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(((size_t)st.st_size + (size_t)pg - 1) / (size_t)pg);
	if (map == MAP_FAILED || !vec)
		die("%s: mapping it: %s", path, strerror(errno));
	if (mincore(map, (size_t)st.st_size, vec))
		die("%s: mincore: %s", path, strerror(errno));
	for (off_t i = 0; i < (st.st_size + pg - 1) / pg; i++)
		n += vec[i] & 1;
	printf("%llu\n", (unsigned long long)(n * (uint64_t)pg));
	free(vec);
	munmap(map, (size_t)st.st_size);
	close(fd);
}

/* The image out of the page cache: the next restore reads it cold. */
static void cmd_uncache(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		die("%s: dropping it from the page cache: %s", path, strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";

	if (argc < 3) {
		fprintf(stderr, "usage: imgtool sections|flip|flip-region|set-header|set-oom|syscall|xstate|vdso-rename|cached|uncache "
				"IMAGE [ARGS]\n");
		return 2;
	}
	if (!strcmp(cmd, "uncache") && argc == 3) {
		cmd_uncache(argv[2]);
		return 0;
	}
	if (!strcmp(cmd, "cached") && argc == 3) {
		cmd_cached(argv[2]);
		return 0;
	}
	load(argv[2]);
	if (!strcmp(cmd, "sections") && argc == 3)
		cmd_sections();
	else if (!strcmp(cmd, "flip") && argc == 4)
		cmd_flip(argv[3]);
	else if (!strcmp(cmd, "flip-region") && (argc == 3 || argc == 4))
		cmd_flip_region(argc == 4 ? (unsigned)atoi(argv[3]) % 100 : 50);
	else if (!strcmp(cmd, "set-header") && argc == 5)
		cmd_set_header(argv[3], argv[4]);
	else if (!strcmp(cmd, "set-oom") && argc == 4)
		cmd_set_oom(argv[3]);
	else if (!strcmp(cmd, "syscall") && argc == 4)
		cmd_syscall(argv[3]);
	else if (!strcmp(cmd, "xstate") && argc == 4)
		cmd_xstate(argv[3]);
	else if (!strcmp(cmd, "vdso-rename") && argc == 5)
		cmd_vdso_rename(argv[3], argv[4]);
	else
		die("unknown command or wrong arguments: %s", cmd);
	return 0;
}
