// SPDX-License-Identifier: MIT
#include "fmt.h"

struct out {
	char *p;
	size_t n, size;
};

static void put(struct out *o, char c)
{
	if (o->n + 1 < o->size)
		o->p[o->n++] = c;
}

static void put_num(struct out *o, unsigned long long v, unsigned base)
{
	char tmp[24];
	int i = 0;

	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (i)
		put(o, tmp[--i]);
}

size_t fmt_v(char *buf, size_t size, const char *f, va_list ap)
{
	struct out o = { buf, 0, size };

	for (; *f; f++) {
		int lng = 0, alt = 0;
		unsigned long long v;

		if (*f != '%') {
			put(&o, *f);
			continue;
		}
		if (*++f == '#')
			alt = 1, f++;
		while (*f == 'l')
			lng++, f++;
		switch (*f) {
		case 's': {
			const char *s = va_arg(ap, const char *);

			for (s = s ? s : "(null)"; *s; s++)
				put(&o, *s);
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 'd':
		case 'i': {
			long long x = lng ? va_arg(ap, long long) : va_arg(ap, int);

			if (x < 0)
				put(&o, '-');
			put_num(&o, x < 0 ? -(unsigned long long)x : (unsigned long long)x, 10);
			break;
		}
		case 'u':
		case 'x':
		case 'p':
			if (*f == 'p')
				v = (unsigned long long)(unsigned long)va_arg(ap, void *);
			else
				v = lng ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
			if (alt || *f == 'p')
				put(&o, '0'), put(&o, 'x');
			put_num(&o, v, *f == 'u' ? 10 : 16);
			break;
		case '%':
			put(&o, '%');
			break;
		default:
			return o.n;	/* unknown conversion: stop rather than guess */
		}
	}
	if (size)
		buf[o.n] = 0;
	return o.n;
}

size_t fmt(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, f);
	n = fmt_v(buf, size, f, ap);
	va_end(ap);
	return n;
}
