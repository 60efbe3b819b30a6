/* SPDX-License-Identifier: MIT */
#ifndef IBCR_IMAGE_IO_H
#define IBCR_IMAGE_IO_H

#include <stdint.h>

#include "err.h"
#include "image.h"
#include "model.h"

/*
 * Writing: sections go to "<path>.tmp.<pid>" through a buffer; the
 * image appears under its name only in imgw_commit, after the END
 * section is written and the file and its directory are synced. Any
 * failure leaves no file that looks like an image (imgw_abort unlinks).
 */
struct img_writer {
	int fd;
	char *path, *tmp;
	uint64_t off;		/* logical end of the file */
	uint64_t nsections;
	struct wqueue *q;	/* writes in the background (wqueue.h) */
	uint8_t *wbuf;		/* its buffer being filled */
	size_t wlen;
	/* the section being streamed, if any */
	int streaming;
	uint64_t sec_off;
	struct ibcr_sec_hdr sec;
	uint32_t sec_crc;
	/* streamed sections' final headers, written at commit (imgw_end) */
	struct imgw_patch {
		uint64_t off;
		struct ibcr_sec_hdr hdr;
	} *patch;
	size_t npatch;
	uint64_t direct_bytes;	/* after commit: written by direct I/O */
};

/* imgw_open's flags */
#define IMGW_DIRECT 1u	/* page data past the page cache: wqueue.h */
#define IMGW_SELF_CONTAINED 2u	/* header flag IBCR_HDRF_SELF_CONTAINED */

int imgw_open(struct img_writer *w, const char *path, uint32_t arch,
	      uint32_t nprocs, unsigned flags, struct ibcr_err *e);
int imgw_section(struct img_writer *w, uint32_t type, uint32_t proc,
		 const char *name, const void *payload, uint64_t size,
		 struct ibcr_err *e);
/* A section whose payload is streamed; `align` aligns the payload start. */
int imgw_begin(struct img_writer *w, uint32_t type, uint32_t proc,
	       uint32_t flags, uint32_t align, struct ibcr_err *e);
int imgw_data(struct img_writer *w, const void *data, uint64_t len,
	      struct ibcr_err *e);
int imgw_end(struct img_writer *w, struct ibcr_err *e);
/*
 * Payload written in place, without a copy: imgw_room gives the free
 * part of the write buffer (*len: at most what was asked, at least min
 * when the request was that large; the buffer is handed on first if
 * less is left), imgw_fill says how many bytes of it are now payload.
 * Not for sections whose checksum the writer computes.
 */
void *imgw_room(struct img_writer *w, size_t min, size_t *len, struct ibcr_err *e);
int imgw_fill(struct img_writer *w, size_t n, struct ibcr_err *e);
/* Offset of the next payload byte, relative to the open section's payload. */
uint64_t imgw_payload_pos(const struct img_writer *w);
int imgw_commit(struct img_writer *w, struct ibcr_err *e);
void imgw_abort(struct img_writer *w);

/* Reading. */
struct img_section {
	struct ibcr_sec_hdr h;
	uint64_t off;		/* header offset */
	uint64_t payload;	/* payload offset */
};

struct img_reader {
	int fd;
	char *path;
	uint64_t size;
	struct ibcr_file_hdr hdr;
	uint32_t nsecs;
	struct img_section *secs;
};

/*
 * Opens an image and checks its whole structure without reading page
 * data: header, every section header and its bounds, the END section.
 * Does not judge the architecture: callers that restore check hdr.arch.
 */
int imgr_open(struct img_reader *r, const char *path, struct ibcr_err *e);
void imgr_close(struct img_reader *r);
/* Reads a section's payload (malloc'd) and checks its CRC. */
int imgr_payload(struct img_reader *r, uint32_t idx, uint8_t **out,
		 struct ibcr_err *e);
/* Decodes and checks every metadata section of process `proc`. */
int imgr_load_process(struct img_reader *r, uint32_t proc,
		      struct ibcr_process_state *ps, struct ibcr_err *e);
/* Decodes the image-wide file table (an image without one has none). */
int imgr_load_files(struct img_reader *r, struct ibcr_files *f, struct ibcr_err *e);
/* Decodes the image's SysV segments (none if it has no such section). */
int imgr_load_sysv(struct img_reader *r, struct ibcr_sysv *s, struct ibcr_err *e);
/* Decodes the image's SysV semaphore sets and message queues (none if absent). */
int imgr_load_sysvipc(struct img_reader *r, struct ibcr_sysvipc *s, struct ibcr_err *e);
/*
 * image_port.c: the saving kernel's [vdso] bytes (*bytes malloc'd; none,
 * NULL and 0, in an image made before they were saved).
 */
int imgr_load_vdso(struct img_reader *r, uint8_t **bytes, uint64_t *size,
		   struct ibcr_err *e);
/*
 * The blocks of a compressed stream section (PAGES, BACKING contents):
 * every header checked, in order; `what` names the section's owner in
 * messages. *blocks grows (realloc).
 */
int imgr_scan_blocks(struct img_reader *r, const struct img_section *s, const char *what,
		     struct ibcr_blockref **blocks, uint64_t *nblocks, uint64_t *raw_size,
		     struct ibcr_err *e);
/* image_port.c: the backing files' table (none in an older image). */
int imgr_load_backing(struct img_reader *r, struct ibcr_backings *f, struct ibcr_err *e);
/* A self-contained image's carried files: their bytes, from the contents stream. */
struct contents_reader {
	struct img_reader *r;
	const struct ibcr_backings *f;
	uint8_t *raw, *stored;	/* compressed: the block decoded last */
	int64_t cur;
};
#define CONTENTS_CHUNK (1ul << 20)
void contents_open(struct contents_reader *c, struct img_reader *r,
		   const struct ibcr_backings *f);
int contents_read(struct contents_reader *c, uint64_t off, void *dst, size_t len,
		  struct ibcr_err *e);
void contents_close(struct contents_reader *c);
/* Every carried file's contents against its checksum (ckpt-info --verify). */
int contents_verify(struct img_reader *r, const struct ibcr_backings *f, struct ibcr_err *e);
/* Every descriptor of ps names an object of f. */
int ibcr_check_fds(const struct ibcr_process_state *ps, const struct ibcr_files *f,
		   struct ibcr_err *e);
/* Reads every region's page data and checks its CRC. */
int imgr_verify_pages(struct img_reader *r, const struct ibcr_process_state *ps,
		      struct ibcr_err *e);

const char *ibcr_sec_type_name(uint32_t type);
/* A region's name for messages: its path, or what kind of memory it is. */
const char *ibcr_vma_label(const struct ibcr_process_state *ps, uint32_t vma);
const char *ibcr_arch_name(uint32_t arch);
/* The architecture this program was built for. */
uint32_t ibcr_host_arch(void);

/* Encoders used by the saver: build one section's payload. */
struct buf;
void enc_proc(struct buf *b, const struct ibcr_process_state *ps);
void enc_thread(struct buf *b, const struct ibcr_thread_state *t);
void enc_files(struct buf *b, const struct ibcr_process_state *ps);
void enc_fileobjs(struct buf *b, const struct ibcr_files *f);
void enc_vmas(struct buf *b, const struct ibcr_process_state *ps);
/* cow_codec.c: the COW section (decoded after the process's VMAS) */
void enc_cow(struct buf *b, const struct ibcr_process_state *ps);
int dec_cow(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	    uint32_t page_size, struct ibcr_process_state *ps, struct ibcr_err *e);
/* pagesums.c: the PAGESUMS section (decoded after the process's VMAS) */
void enc_pagesums(struct buf *b, const struct ibcr_process_state *ps);
int dec_pagesums(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		 uint32_t page_size, struct ibcr_process_state *ps, struct ibcr_err *e);
/* how many sums region v has with chunks of `chunk` bytes */
uint64_t pagesums_of(const struct ibcr_vma *v, uint32_t chunk);
void enc_sysvsem(struct buf *b, const struct ibcr_sysvipc *s);
void enc_sysvmsg(struct buf *b, const struct ibcr_sysvipc *s);
/* image_attrs.c: process and per-thread attributes (PATTRS, TATTRS) */
void enc_pattrs(struct buf *b, const struct ibcr_process_state *ps);
void enc_tattrs(struct buf *b, const struct ibcr_process_state *ps);
int dec_pattrs(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	       struct ibcr_process_state *ps, struct ibcr_err *e);
int dec_tattrs(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	       struct ibcr_process_state *ps, struct ibcr_err *e);
/* ptimers.c: POSIX timers (PTIMERS, after the THREADs) */
void enc_ptimers(struct buf *b, const struct ibcr_process_state *ps);
int dec_ptimers(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		struct ibcr_process_state *ps, struct ibcr_err *e);
int ptimer_clock_ok(int32_t clock);	/* a clock whose timers are restored */

/* image_priv.c: CREDS and SECCOMP (privileges and sandbox) */
void enc_creds(struct buf *b, const struct ibcr_priv *pv);
void enc_seccomp(struct buf *b, const struct ibcr_priv *pv);
int dec_creds(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	      struct ibcr_priv *pv, struct ibcr_err *e);
int dec_seccomp(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		struct ibcr_priv *pv, struct ibcr_err *e);
/* A process that is not a zombie has credentials for each thread, filters for each */
int ibcr_priv_check(const char *path, uint32_t proc, const struct ibcr_process_state *ps,
		    struct ibcr_err *e);
void enc_backing(struct buf *b, const struct ibcr_backings *f);

#endif
