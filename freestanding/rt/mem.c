// SPDX-License-Identifier: MIT
/*
 * memcpy and friends for the freestanding restore core, which has no
 * libc but whose compiler still emits calls to these for struct copies.
 * Built with -fno-tree-loop-distribute-patterns so that gcc does not turn
 * these very loops back into calls to themselves.
 */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, s, 8);	/* a plain 8-byte load/store */
		__builtin_memcpy(d, &v, 8);
		d += 8;
		s += 8;
		n -= 8;
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}
