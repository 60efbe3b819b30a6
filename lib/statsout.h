/* SPDX-License-Identifier: MIT */
#ifndef IBCR_STATSOUT_H
#define IBCR_STATSOUT_H

#include <stdint.h>
#include <stdio.h>

/*
 * --stats: one line "ibcr-stats: name=value ..." (text), or one JSON
 * object on one line (docs/json.md): {"program": PROG, "release": ...,
 * then every field}. Names and their order are the same in both.
 */
struct stat_field {
	const char *name;
	double ms;		/* a time, printed with one decimal */
	uint64_t count;		/* a size or a count, when is_count */
	int is_count;
};

#define STAT_MS(n, v) { (n), (v), 0, 0 }
#define STAT_COUNT(n, v) { (n), 0, (uint64_t)(v), 1 }

void stats_print(FILE *f, int json, const char *prog, const struct stat_field *s,
		 unsigned n);

/* JSON string contents of s, escaped, to f (no quotes). */
void json_escape(FILE *f, const char *s);

#endif
