// SPDX-License-Identifier: MIT
/*
 * A node's rendezvous files, packed into one value for a PMIx fence and
 * unpacked on the other nodes (pmix_bundle.h): the verbs id exchange of a
 * restart is then one all-to-all exchange per round, whatever the number
 * of QPs and processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmix_bundle.h"

#define FILE_MAX (1 << 24)	/* a rendezvous file is a few KiB */

static int wanted(const char *name, const char *prefixes)
{
	const char *p = prefixes;

	while (*p) {
		size_t l = strcspn(p, ",");

		if (l && !strncmp(name, p, l))
			return 1;
		p += l;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Appends "NAME LEN\n" and the file's bytes to *out (of *len, *cap). */
static int add_file(const char *dir, const char *name, char **out, size_t *len, size_t *cap,
		    char *why, size_t n)
{
	char path[1024];
	struct stat st;
	ssize_t r;
	size_t need;
	char *b;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;	/* consumed by a process of this node meanwhile */
		snprintf(why, n, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		close(fd);
		snprintf(why, n, "%s: not a rendezvous file (%lld bytes)", path,
			 (long long)st.st_size);
		return -1;
	}
	need = *len + strlen(name) + 24 + (size_t)st.st_size + 1;
	if (need > *cap) {
		b = realloc(*out, need * 2);
		if (!b) {
			close(fd);
			snprintf(why, n, "out of memory for the files of %s", dir);
			return -1;
		}
		*out = b;
		*cap = need * 2;
	}
	*len += (size_t)sprintf(*out + *len, "%s %lld\n", name, (long long)st.st_size);
	r = read(fd, *out + *len, (size_t)st.st_size);
	close(fd);
	if (r != st.st_size) {
		snprintf(why, n, "%s: short read", path);
		return -1;
	}
	*len += (size_t)r;
	(*out)[*len] = 0;
	return 0;
}

char *bundle_dir(const char *dir, const char *prefixes, unsigned *nfiles, char *why, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t len = 0, cap = 4096;
	char *out = calloc(1, cap);

	*nfiles = 0;
	if (!d || !out) {
		snprintf(why, n, "cannot read the directory %s: %s", dir, strerror(errno));
		if (d)
			closedir(d);
		free(out);
		return NULL;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !wanted(de->d_name, prefixes))
			continue;
		if (add_file(dir, de->d_name, &out, &len, &cap, why, n)) {
			closedir(d);
			free(out);
			return NULL;
		}
		(*nfiles)++;
	}
	closedir(d);
	return out;
}

static int write_file(const char *dir, const char *name, const char *p, size_t len, char *why,
		      size_t n)
{
	char path[1024], tmp[1100];
	int fd, bad;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.fwd.%d.%s", dir, (int)getpid(), name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, n, "cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	bad = write(fd, p, len) != (ssize_t)len;
	bad |= close(fd) != 0;
	if (bad || rename(tmp, path)) {
		snprintf(why, n, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int unbundle(const char *bundle, const char *dir, unsigned *nfiles, char *why, size_t n)
{
	const char *p = bundle, *end = bundle + strlen(bundle);

	while (*p) {
		char name[256];
		long long len;
		const char *nl = strchr(p, '\n');

		if (!nl || sscanf(p, "%255s %lld", name, &len) != 2 || len < 0 ||
		    len > FILE_MAX || strchr(name, '/') || name[0] == '.' ||
		    end - (nl + 1) < len) {
			snprintf(why, n, "a peer's rendezvous files for %s are malformed", dir);
			return -1;
		}
		if (write_file(dir, name, nl + 1, (size_t)len, why, n))
			return -1;
		(*nfiles)++;
		p = nl + 1 + len;
	}
	return 0;
}
