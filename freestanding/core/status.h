/* SPDX-License-Identifier: MIT */
/*
 * The status protocol between the loader, the child it forks and the
 * restore core that child becomes. Two pipes per restored process: the
 * status pipe (child or core -> loader) and the control pipe (loader ->
 * core). Every message starts with its one-byte kind; the fixed ones are
 * the packed structs below, written in one write() so that the reader
 * never sees half of one. Both ends are the same build: this layout is
 * no file format, but it is the one place that says what each side
 * sends. Shared by loader/ and freestanding/core/ (no libc).
 */
#ifndef IBCR_STATUS_H
#define IBCR_STATUS_H

#include <stdint.h>

/* child or core -> loader, on the status pipe */
enum status_kind {
	ST_ERROR = 'E',		/* the text up to the end of the pipe: the restore failed */
	ST_TRACE = 'D',		/* the text up to '\n': one trace line (IBCR_TRACE=1) */
	ST_CHILD = 'C',		/* struct st_child: the child's pid (not a root) */
	ST_FILL = 'P',		/* struct st_fill: fill a region of a compressed image */
	ST_HELP = 'H',		/* struct st_help without .uffd: write from .from on */
	ST_HELP_UFFD = 'U',	/* struct st_help: copy in through the core's uffd */
	ST_LAZY = 'L',		/* struct st_lazy: the lazy fill's userfaultfd */
	ST_READY = 'R',		/* struct st_ready: every thread ready, the plan's address */
};

/* loader -> core, on the control pipe: one byte, except ct_help_done */
enum control_kind {
	CT_DONE = 'K',		/* the request was served (after ST_HELP*: ct_help_done) */
	CT_CANNOT = 'N',	/* the loader cannot serve it: the core does it itself */
	CT_FAILED = 'X',	/* it failed; the loader has said why */
	CT_TRACED = 'T',	/* after ST_READY: the loader traces the threads, releases them */
	CT_GO = 'G',		/* after ST_READY: not traced, the threads go alone */
};

struct st_child {
	uint8_t kind;		/* ST_CHILD */
	int32_t pid;
} __attribute__((packed));

struct st_fill {
	uint8_t kind;		/* ST_FILL */
	uint32_t vma;		/* index in the plan's regions */
	int32_t uffd;		/* the core's userfaultfd's number, or -1 */
} __attribute__((packed));

struct st_help {
	uint8_t kind;		/* ST_HELP (the message ends before .uffd) or ST_HELP_UFFD */
	uint32_t vma;
	uint64_t from;		/* offset in the region's data; 0 with a uffd */
	int32_t uffd;
} __attribute__((packed));

struct st_lazy {
	uint8_t kind;		/* ST_LAZY */
	int32_t uffd;		/* its number, or -1 */
	int32_t err;		/* why there is none (errno; ENOENT: nothing lazy), or 0 */
} __attribute__((packed));

struct st_ready {
	uint8_t kind;		/* ST_READY */
	uint64_t plan;		/* the plan's address in the restored process */
} __attribute__((packed));

struct ct_help_done {
	uint8_t kind;		/* CT_DONE */
	uint32_t sum;		/* page_sum of the pages the loader put in */
} __attribute__((packed));

/* The bytes on the pipe: the sizes both sides agree on. */
_Static_assert(sizeof(struct st_child) == 5, "ST_CHILD is 5 bytes");
_Static_assert(sizeof(struct st_fill) == 9, "ST_FILL is 9 bytes");
_Static_assert(sizeof(struct st_help) == 17, "ST_HELP_UFFD is 17 bytes");
_Static_assert(sizeof(struct st_lazy) == 9, "ST_LAZY is 9 bytes");
_Static_assert(sizeof(struct st_ready) == 9, "ST_READY is 9 bytes");
_Static_assert(sizeof(struct ct_help_done) == 5, "CT_DONE after ST_HELP is 5 bytes");

/* ST_HELP stops before the descriptor it does not have. */
#define ST_HELP_LEN(kind) ((kind) == ST_HELP_UFFD ? sizeof(struct st_help) : \
			   sizeof(struct st_help) - sizeof(int32_t))

/*
 * The length of a fixed message of kind k in all, or 0 for the text
 * ones (ST_ERROR, ST_TRACE) and unknown kinds: the loader reads the kind
 * byte first, then the rest of the message.
 */
static inline uint32_t st_len(uint8_t k)
{
	switch (k) {
	case ST_CHILD: return sizeof(struct st_child);
	case ST_FILL: return sizeof(struct st_fill);
	case ST_HELP: case ST_HELP_UFFD: return (uint32_t)ST_HELP_LEN(k);
	case ST_LAZY: return sizeof(struct st_lazy);
	case ST_READY: return sizeof(struct st_ready);
	default: return 0;
	}
}

/* Any fixed status message, as the loader reads it. */
union st_msg {
	uint8_t kind;
	struct st_child child;
	struct st_fill fill;
	struct st_help help;
	struct st_lazy lazy;
	struct st_ready ready;
};

#endif
