// SPDX-License-Identifier: MIT
/*
 * XXH64, written from the xxHash specification (xxhash_spec.md): four
 * accumulators over 32-byte stripes, then the tail, then an avalanche.
 * Freestanding: the restore core uses it too. Little-endian only, as
 * are both architectures ibcr runs on.
 */
#include "xxh64.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return v;
}

static uint64_t round64(uint64_t acc, uint64_t lane)
{
	return rotl(acc + lane * P2, 31) * P1;
}

static uint64_t merge(uint64_t h, uint64_t acc)
{
	return (h ^ round64(0, acc)) * P1 + P4;
}

/* The four accumulators over every whole stripe, merged. */
static uint64_t stripes(const uint8_t **pp, const uint8_t *end, uint64_t seed)
{
	uint64_t a1 = seed + P1 + P2, a2 = seed + P2, a3 = seed, a4 = seed - P1, h;
	const uint8_t *p = *pp;

	for (; end - p >= 32; p += 32) {
		a1 = round64(a1, load64(p));
		a2 = round64(a2, load64(p + 8));
		a3 = round64(a3, load64(p + 16));
		a4 = round64(a4, load64(p + 24));
	}
	*pp = p;
	h = rotl(a1, 1) + rotl(a2, 7) + rotl(a3, 12) + rotl(a4, 18);
	return merge(merge(merge(merge(h, a1), a2), a3), a4);
}

uint64_t xxh64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t h = len >= 32 ? stripes(&p, end, seed) : seed + P5;

	h += len;
	for (; end - p >= 8; p += 8)
		h = rotl(h ^ round64(0, load64(p)), 27) * P1 + P4;
	if (end - p >= 4) {
		h = rotl(h ^ (load32(p) * P1), 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl(h ^ (*p * P5), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}

uint32_t page_sum(uint32_t sum, const void *p, size_t len, size_t page, uint64_t index)
{
	const uint8_t *c = p;

	for (size_t off = 0; off < len; off += page)
		sum += (uint32_t)xxh64(c + off, len - off < page ? len - off : page, index++);
	return sum;
}

uint32_t block_sum(const void *p, size_t len)
{
	return (uint32_t)xxh64(p, len, 0);
}
