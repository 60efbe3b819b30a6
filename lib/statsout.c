// SPDX-License-Identifier: MIT
#include "statsout.h"
#include "version.h"

void json_escape(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
}

void stats_print(FILE *f, int json, const char *prog, const struct stat_field *s,
		 unsigned n)
{
	if (json) {
		fprintf(f, "{\"program\":\"%s\",\"release\":\"", prog);
		json_escape(f, ibcr_release());
		fputc('"', f);
	} else {
		fputs("ibcr-stats:", f);
	}
	for (unsigned i = 0; i < n; i++) {
		if (json)
			fprintf(f, ",\"%s\":", s[i].name);
		else
			fprintf(f, " %s=", s[i].name);
		if (s[i].is_count)
			fprintf(f, "%llu", (unsigned long long)s[i].count);
		else
			fprintf(f, "%.1f", s[i].ms);
	}
	fputs(json ? "}\n" : "\n", f);
	fflush(f);
}
