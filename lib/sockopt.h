/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SOCKOPT_H
#define IBCR_SOCKOPT_H

/*
 * Socket options as the image holds them (the SOCKOPTS section): which
 * options ibcr knows, in the order a restore applies them, and the
 * section's codec. The saver reads them (saver/sockopt.c), the loader
 * sets them (loader/sockopt.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "image.h"

struct buf;
struct img_reader;

/* How an option is read and put back (sockopt_desc.how). */
enum sockopt_how {
	SOH_PLAIN = 0,		/* the bytes getsockopt gives, set as they are */
	SOH_BUFFER,		/* SO_SNDBUF/SO_RCVBUF: saved only when locked */
				/* (SO_BUF_LOCK); the kernel doubles what is */
				/* set, so half is set back */
	SOH_FILTER,		/* classic BPF (SO_GET_FILTER): the instructions */
	SOH_UNCONNECTED,	/* read only while not connected: once it is, */
				/* getsockopt tells the kernel's own value */
	SOH_LATE,		/* set after the queued data is put back */
};

struct sockopt_desc {
	int level, name;
	const char *label;	/* "TCP_KEEPIDLE", for messages */
	uint16_t size;		/* bytes read (at most, for strings and lists) */
	uint8_t how;		/* enum sockopt_how */
	uint8_t varlen;		/* the value's length varies (a string, a list) */
	uint8_t dgram;		/* only for sockets without a connection stream: */
				/* multicast, which TCP may read and not set */
};

/* Every option, in the order of restoring (IP_TOS before SO_PRIORITY...). */
extern const struct sockopt_desc sockopt_table[];
extern const size_t sockopt_count;

/* The entry for (level, name), or NULL. */
const struct sockopt_desc *sockopt_find(int level, int name);

/* The image's socket options: records sorted by object, values in data. */
struct ibcr_sockopts {
	uint32_t n, cap;
	struct ibcr_sockopt *o;
	uint64_t size;
	uint8_t *data;
};

/* Appends one option of object obj (saver). */
void sockopts_add(struct ibcr_sockopts *s, uint32_t obj, int level, int name,
		  const void *val, uint32_t len);
void sockopts_free(struct ibcr_sockopts *s);
void enc_sockopts(struct buf *b, const struct ibcr_sockopts *s);
/* Decodes the SOCKOPTS section (none: no options); objects < nobjs. */
int imgr_load_sockopts(struct img_reader *r, uint32_t nobjs, struct ibcr_sockopts *s,
		       struct ibcr_err *e);

#endif
