/*
 * fortify-shim.c - glibc _FORTIFY_SOURCE entry points for static musl links.
 *
 * Debian builds its static libraries (libz.a from zlib1g-dev, libzstd.a
 * from libzstd-dev) against glibc with -D_FORTIFY_SOURCE=2.  A few of their
 * objects therefore call glibc's checked variants (__snprintf_chk, ...),
 * which musl does not have.  In zlib only gzprintf/gzvprintf need them
 * (compress/deflate/inflate/crc32 link without this file); libzstd.a needs
 * __fprintf_chk (debug and dictionary-builder messages).
 *
 * tools/aarch64/deps.sh compiles this file into libibcr-fortify-shim.a next
 * to libz.a; toolchain.mk links it after libz.a and libzstd.a.  Because it is
 * an archive, nothing is pulled in unless one of these symbols is needed.
 *
 * Semantics follow glibc: "slen" is the real size of the destination as the
 * compiler knew it; asking to write more than that is a buffer overflow and
 * aborts, exactly as glibc's __chk_fail would.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen,
                    const char *fmt, va_list ap);
int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen,
                   const char *fmt, ...);
int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt, va_list ap);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __printf_chk(int flag, const char *fmt, ...);
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memset_chk(void *dst, int c, size_t n, size_t dstlen);

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen,
                    const char *fmt, va_list ap)
{
    (void)flag;
    if (maxlen > slen)
        abort();
    return vsnprintf(s, maxlen, fmt, ap);
}

int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen,
                   const char *fmt, ...)
{
    va_list ap;
    int ret;

    va_start(ap, fmt);
    ret = __vsnprintf_chk(s, maxlen, flag, slen, fmt, ap);
    va_end(ap);
    return ret;
}

int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt, va_list ap)
{
    int ret;

    (void)flag;
    if (slen == 0)
        abort();
    ret = vsnprintf(s, slen, fmt, ap);
    if (ret < 0 || (size_t)ret >= slen)
        abort();
    return ret;
}

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...)
{
    va_list ap;
    int ret;

    va_start(ap, fmt);
    ret = __vsprintf_chk(s, flag, slen, fmt, ap);
    va_end(ap);
    return ret;
}

/* flag only asks glibc to reject %n in writable format strings: ignored. */
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    (void)flag;
    return vfprintf(f, fmt, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    int ret;

    va_start(ap, fmt);
    ret = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return ret;
}

int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    int ret;

    va_start(ap, fmt);
    ret = __vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return ret;
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (n > dstlen)
        abort();
    return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (n > dstlen)
        abort();
    return memmove(dst, src, n);
}

void *__memset_chk(void *dst, int c, size_t n, size_t dstlen)
{
    if (n > dstlen)
        abort();
    return memset(dst, c, n);
}
