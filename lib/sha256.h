/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SHA256_H
#define IBCR_SHA256_H

#include <stddef.h>
#include <stdint.h>

/*
 * SHA-256 (FIPS 180-4): the digest by which a restore recognises a file
 * that is not the very one saved but has its contents (a copy, another
 * machine). Cryptographic on purpose: a file chosen to pass as another
 * must not be made to pass a root restore's check.
 */
struct sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes hashed so far */
	uint8_t buf[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[32]);
void sha256(const void *p, size_t n, uint8_t out[32]);

#endif
