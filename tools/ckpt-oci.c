// SPDX-License-Identifier: MIT
/*
 * ckpt-oci IMAGE -o DIR: an OCI image layout (image-spec 1.0) whose one
 * layer holds the static restart-loader and IMAGE (as /image.ckpt),
 * entrypoint ["/restart-loader", "--cgroup=here", "/image.ckpt"]: a container that
 * needs nothing else
 * (with a self-contained IMAGE: saver --self-contained).
 *
 *   ckpt-oci [--loader PATH] [--tag TAG] IMAGE -o DIR
 *
 * Written here rather than with umoci: a ustar writer, gzip (zlib) and
 * SHA-256 (lib/sha256.c) are all it takes, and the tool then needs
 * nothing at run time. umoci and runc read what it writes (t_oci).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "version.h"
#include "buf.h"
#include "err.h"
#include "sha256.h"

#define CHUNK (1u << 20)
/* the image's name in the container: its entrypoint's argument */
#define IMAGE_NAME "image.ckpt"

/* The layer being written: a tar stream, gzipped into a blob. */
struct layer {
	int fd;			/* the blob, under a temporary name */
	struct sha256 raw, gz;	/* of the tar (diff_id) and of the blob */
	uint64_t gz_size;
	z_stream z;
	uint8_t *out;
};

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static int drain(struct layer *l, int flush, struct ibcr_err *e)
{
	do {
		size_t n;

		l->z.next_out = l->out;
		l->z.avail_out = CHUNK;
		if (deflate(&l->z, flush) == Z_STREAM_ERROR)
			return ibcr_fail(e, "compressing the layer failed");
		n = CHUNK - l->z.avail_out;
		sha256_update(&l->gz, l->out, n);
		l->gz_size += n;
		if (n && write(l->fd, l->out, n) != (ssize_t)n)
			return ibcr_fail_errno(e, errno, "writing the layer");
	} while (l->z.avail_out == 0);
	return 0;
}

static int put(struct layer *l, const void *p, size_t n, struct ibcr_err *e)
{
	sha256_update(&l->raw, p, n);
	l->z.next_in = (Bytef *)(uintptr_t)p;
	l->z.avail_in = (uInt)n;
	return drain(l, Z_NO_FLUSH, e);
}

/* A ustar number: octal, or base-256 (GNU) when it does not fit. */
static void tar_num(char *field, size_t len, uint64_t v)
{
	if (v < (1ull << (3 * (len - 1)))) {
		snprintf(field, len, "%0*llo", (int)len - 1, (unsigned long long)v);
		return;
	}
	memset(field, 0, len);
	field[0] = (char)0x80;
	for (size_t i = len - 1; i > 0 && v; i--, v >>= 8)
		field[i] = (char)(v & 0xff);
}

static int tar_file(struct layer *l, const char *name, const char *src, unsigned mode,
		    struct ibcr_err *e)
{
	static const uint8_t zero[512];
	uint8_t h[512] = { 0 }, *buf;
	unsigned sum = 0;
	struct stat st;
	uint64_t done = 0;
	int fd = open(src, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fstat(fd, &st)) {
		rc = ibcr_fail_errno(e, errno, "%s", src);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	snprintf((char *)h, 100, "%s", name);
	tar_num((char *)h + 100, 8, mode);
	tar_num((char *)h + 108, 8, 0);
	tar_num((char *)h + 116, 8, 0);
	tar_num((char *)h + 124, 12, (uint64_t)st.st_size);
	tar_num((char *)h + 136, 12, (uint64_t)st.st_mtim.tv_sec);
	h[156] = '0';
	snprintf((char *)h + 257, 6, "ustar");	/* magic, then version "00" */
	h[263] = '0';
	h[264] = '0';
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	buf = xmalloc(CHUNK);
	rc = put(l, h, sizeof(h), e);
	while (!rc && done < (uint64_t)st.st_size) {
		ssize_t k = read(fd, buf, CHUNK);

		if (k <= 0)
			rc = ibcr_fail_errno(e, k ? errno : EIO, "reading %s", src);
		else
			rc = put(l, buf, (size_t)k, e);
		done += k > 0 ? (uint64_t)k : 0;
	}
	if (!rc && st.st_size % 512)
		rc = put(l, zero, 512 - (size_t)(st.st_size % 512), e);
	free(buf);
	close(fd);
	return rc;
}

/* A blob from a temporary file: renamed to its digest. */
static int blob_rename(const char *dir, const char *tmp, const char *digest,
		       struct ibcr_err *e)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, digest);
	if (rename(tmp, path))
		return ibcr_fail_errno(e, errno, "renaming %s to %s", tmp, path);
	return 0;
}

static int write_file(const char *path, const char *data, size_t n, struct ibcr_err *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, n) != (ssize_t)n || fsync(fd)) {
		ibcr_fail_errno(e, errno, "writing %s", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return close(fd) ? ibcr_fail_errno(e, errno, "writing %s", path) : 0;
}

/* A JSON blob: written under its digest, which it returns in `digest`. */
static int json_blob(const char *dir, const struct buf *b, char digest[65], struct ibcr_err *e)
{
	uint8_t d[32];
	char path[4096];

	sha256(b->p, b->len, d);
	hex(d, digest);
	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, digest);
	return write_file(path, (const char *)b->p, b->len, e);
}

/* A JSON string, quoted, with what JSON must escape escaped. */
static void json_str(struct buf *b, const char *s)
{
	buf_put(b, "\"", 1);
	for (; *s; s++) {
		char esc[8];

		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned char)*s);
			buf_put(b, esc, 6);
		} else {
			buf_put(b, s, 1);
		}
	}
	buf_put(b, "\"", 1);
}

static void json_raw(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

static const char *oci_arch(void)
{
	struct utsname u;

	if (uname(&u))
		return "amd64";
	return !strcmp(u.machine, "aarch64") ? "arm64" : "amd64";
}

struct args {
	const char *image, *dir, *loader, *tag;
};

static int make_layer(const struct args *a, const char *name, char diff[65], char dig[65],
		      uint64_t *size, struct ibcr_err *e)
{
	static const uint8_t end[1024];
	char tmp[4096];
	uint8_t d[32];
	struct layer l = { 0 };
	int rc;

	snprintf(tmp, sizeof(tmp), "%s/blobs/sha256/.layer.tmp", a->dir);
	l.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (l.fd < 0)
		return ibcr_fail_errno(e, errno, "creating %s", tmp);
	sha256_init(&l.raw);
	sha256_init(&l.gz);
	l.out = xmalloc(CHUNK);
	/* level 1: an ibcr image compresses itself, if at all */
	if (deflateInit2(&l.z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		rc = ibcr_fail(e, "zlib cannot compress");
	else
		rc = tar_file(&l, "restart-loader", a->loader, 0755, e) ||
		     tar_file(&l, name, a->image, 0644, e) || put(&l, end, sizeof(end), e) ||
		     drain(&l, Z_FINISH, e) ? -1 : 0;
	deflateEnd(&l.z);
	free(l.out);
	if (!rc && (fsync(l.fd) || close(l.fd)))
		rc = ibcr_fail_errno(e, errno, "writing %s", tmp);
	else if (rc)
		close(l.fd);
	if (!rc) {
		sha256_final(&l.raw, d);
		hex(d, diff);
		sha256_final(&l.gz, d);
		hex(d, dig);
		*size = l.gz_size;
		rc = blob_rename(a->dir, tmp, dig, e);
	}
	if (rc)
		unlink(tmp);
	return rc;
}

static void config_json(struct buf *b, const char *name, const char *diff)
{
	char ep[4200];

	snprintf(ep, sizeof(ep), "/%s", name);
	json_raw(b, "{\"architecture\":");
	json_str(b, oci_arch());
	/* the container's cgroup is its runtime's choice, not the saved path */
	json_raw(b, ",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/restart-loader\","
		    "\"--cgroup=here\",");
	json_str(b, ep);
	json_raw(b, "],\"WorkingDir\":\"/\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:");
	json_raw(b, diff);
	json_raw(b, "\"]}}\n");
}

static void manifest_json(struct buf *b, const char *cfg, size_t cfg_size, const char *layer,
			  uint64_t layer_size)
{
	char n[64];

	json_raw(b, "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		    "\"digest\":\"sha256:");
	json_raw(b, cfg);
	snprintf(n, sizeof(n), "\",\"size\":%zu},", cfg_size);
	json_raw(b, n);
	json_raw(b, "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
		    "\"digest\":\"sha256:");
	json_raw(b, layer);
	snprintf(n, sizeof(n), "\",\"size\":%llu}]}\n", (unsigned long long)layer_size);
	json_raw(b, n);
}

static void index_json(struct buf *b, const char *manifest, size_t size, const char *tag)
{
	char n[64];

	json_raw(b, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		    "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:");
	json_raw(b, manifest);
	snprintf(n, sizeof(n), "\",\"size\":%zu,", size);
	json_raw(b, n);
	json_raw(b, "\"annotations\":{\"org.opencontainers.image.ref.name\":");
	json_str(b, tag);
	json_raw(b, "}}]}\n");
}

static int make_layout(const struct args *a, struct ibcr_err *e)
{
	char path[4096], diff[65], layer[65], cfg[65], man[65];
	const char *name = IMAGE_NAME;
	struct buf c = { 0 }, m = { 0 }, ix = { 0 };
	uint64_t lsize = 0;
	int rc;

	if (mkdir(a->dir, 0755))
		return ibcr_fail_errno(e, errno, "creating the layout %s (it must not exist)",
				       a->dir);
	snprintf(path, sizeof(path), "%s/blobs", a->dir);
	if (mkdir(path, 0755) || (snprintf(path, sizeof(path), "%s/blobs/sha256", a->dir),
				  mkdir(path, 0755)))
		return ibcr_fail_errno(e, errno, "creating %s", path);
	rc = make_layer(a, name, diff, layer, &lsize, e);
	if (!rc) {
		config_json(&c, name, diff);
		rc = json_blob(a->dir, &c, cfg, e);
	}
	if (!rc) {
		manifest_json(&m, cfg, c.len, layer, lsize);
		rc = json_blob(a->dir, &m, man, e);
	}
	if (!rc) {
		index_json(&ix, man, m.len, a->tag);
		snprintf(path, sizeof(path), "%s/index.json", a->dir);
		rc = write_file(path, (const char *)ix.p, ix.len, e);
	}
	if (!rc) {
		static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}\n";

		snprintf(path, sizeof(path), "%s/oci-layout", a->dir);
		rc = write_file(path, layout, sizeof(layout) - 1, e);
	}
	buf_free(&c);
	buf_free(&m);
	buf_free(&ix);
	return rc;
}

/* restart-loader beside this program (build/ holds both). */
static char *default_loader(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);

	if (n <= 0)
		return xstrdup("restart-loader");
	self[n] = 0;
	strcpy(strrchr(self, '/') ? strrchr(self, '/') + 1 : self, "restart-loader");
	return xstrdup(self);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ckpt-oci [--loader PATH] [--tag TAG] IMAGE -o DIR\n"
		   "       ckpt-oci --version | --help\n"
		   "  -o, --output DIR  the OCI image layout to write (must not exist)\n"
		   "      --loader PATH the static restart-loader to put in (default: the one\n"
		   "                    beside ckpt-oci)\n"
		   "      --tag TAG     its reference name in the layout (default: latest)\n"
		   "  -V, --version     print the version and exit\n"
		   "  -h, --help        show this help\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "loader", required_argument, NULL, 'L' },
		{ "tag", required_argument, NULL, 'T' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct args a = { NULL, NULL, NULL, "latest" };
	struct ibcr_err e = { "" };
	char *loader = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "o:Vh", opts, NULL)) != -1) {
		if (c == 'V') {
			ibcr_print_version(stdout, "ckpt-oci");
			return 0;
		} else if (c == 'o')
			a.dir = optarg;
		else if (c == 'L')
			a.loader = optarg;
		else if (c == 'T')
			a.tag = optarg;
		else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!a.dir || optind != argc - 1 || !*a.tag) {
		usage(stderr);
		return 2;
	}
	a.image = argv[optind];
	if (!a.loader)
		a.loader = loader = default_loader();
	if (make_layout(&a, &e)) {
		fprintf(stderr, "ckpt-oci: %s\n", e.msg);
		free(loader);
		return 1;
	}
	free(loader);
	return 0;
}
