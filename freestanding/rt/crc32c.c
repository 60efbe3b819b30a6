// SPDX-License-Identifier: MIT
#include "crc32c.h"

#define POLY_REFLECTED 0x82f63b78u

/* Portable fallback for CPUs without the instruction: bit at a time. */
static uint32_t crc32c_soft(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (POLY_REFLECTED & (0u - (crc & 1)));
	}
	return crc;
}

#if defined(__x86_64__)
#include <cpuid.h>

static int have_hw(void)
{
	unsigned int a, b, c, d;

#if !__STDC_HOSTED__
	return 1;	/* the restore core: the loader refused CPUs without it */
#endif
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (c & bit_SSE4_2) != 0;
}

/*
 * One 8-byte crc32 per iteration runs at several GB/s, well above the
 * disk and page-fault rates that bound save and restore; interleaving
 * streams would be the next step if profiles ever show it.
 */
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#elif defined(__aarch64__)
#include <arm_acle.h>

/* ARMv8.1 makes CRC32 mandatory; Cortex-A53/A57/A72 implement it too. */
static int have_hw(void)
{
	return 1;
}

__attribute__((target("+crc")))
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = __crc32cb(crc, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, p, 8);
		crc = __crc32cd(crc, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = __crc32cb(crc, *p++);
	return crc;
}
#else
static int have_hw(void)
{
	return 0;
}

static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	return crc32c_soft(crc, p, len);
}
#endif

/*
 * cpuid traps to the hypervisor in a VM (tens of microseconds): hosted
 * code asks once. The restore core keeps no writable data and needs not
 * ask (have_hw above).
 */
static int hw_crc(void)
{
#if __STDC_HOSTED__
	static int known = -1;

	if (known < 0)
		known = have_hw();
	return known;
#else
	return have_hw();
#endif
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	if (hw_crc())
		crc = crc32c_hw(crc, p, len);
	else
		crc = crc32c_soft(crc, p, len);
	return ~crc;
}
