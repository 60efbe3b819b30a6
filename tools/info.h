/* SPDX-License-Identifier: MIT */
#ifndef IBCR_TOOLS_INFO_H
#define IBCR_TOOLS_INFO_H

#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include "image_io.h"

/* ckpt-info.c: names and registers, shared by the text and JSON output */
const char *info_vma_kind(const struct ibcr_vma *v);
const char *info_fd_kind(uint32_t k);
void info_pc_sp(uint32_t arch, const uint8_t *gp, uint32_t n, unsigned long long *pc,
		unsigned long long *sp);

/* "127.0.0.1:80", "::1:80": a socket's address as the image saved it */
void info_inet_addr(char *out, size_t n, const struct sockaddr_in6 *a);

/* info_json.c: the image as one JSON object (docs/json.md) */
struct json_out {
	FILE *f;
	int procs;		/* processes written so far */
	const char *path;	/* the image's, as given */
	const struct ibcr_netlock *lock;	/* the network lock it holds, or NULL */
	const struct ibcr_files *files;		/* which sockets that lock holds */
};
void json_begin(struct json_out *j, const char *path, const struct img_reader *r,
		const struct ibcr_sysvipc *ipc);
void json_process(struct json_out *j, uint32_t arch, uint32_t idx,
		  const struct ibcr_process_state *ps, const struct ibcr_files *files);
/* ok: the image is sound; verified: its page data was checked too */
void json_end(struct json_out *j, int ok, int verified, const char *error);

#endif
