// SPDX-License-Identifier: MIT
/*
 * Unit tests of the /proc parsers (lib/procfs.c, proc_stat.c,
 * proc_creds.c) on text as the kernel writes it, and as it could: names
 * with spaces, parentheses and " (deleted)", the largest numbers,
 * truncated lines, fields that older kernels do not have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "proc_creds.h"
#include "proc_stat.h"
#include "procfs.h"

/* maps_parse cuts its text: each test hands it a copy */
static size_t parse(const char *text, int with_flags, struct maps_entry **m)
{
	char *t = strdup(text);
	size_t n = 0;

	maps_parse(t, with_flags, m, &n);
	free(t);
	return n;
}

static void maps_lines(void **state)
{
	struct maps_entry *m;
	size_t n = parse("00400000-00452000 r-xp 00000000 fd:01 1835023    /usr/bin/a b  c\n"
			 "7f0000000000-7f0000021000 rw-s 0001a000 00:05 18446744073709551615 "
			 "/memfd:x (deleted)\n"
			 "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0          [stack]\n"
			 "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n"
			 "7f1000000000-7f1000001000 ---p 00000000 00:00 0 \n", 0, &m);

	assert_int_equal(n, 5);
	assert_int_equal(m[0].start, 0x400000);
	assert_int_equal(m[0].end, 0x452000);
	assert_int_equal(m[0].prot, PROT_READ | PROT_EXEC);
	assert_int_equal(m[0].shared, 0);
	assert_int_equal(m[0].dev_major, 0xfd);
	assert_int_equal(m[0].dev_minor, 1);
	assert_int_equal(m[0].ino, 1835023);
	/* the spaces inside a name are the name's */
	assert_string_equal(m[0].path, "/usr/bin/a b  c");
	assert_int_equal(m[1].shared, 1);
	assert_int_equal(m[1].pgoff, 0x1a000);
	assert_true(m[1].ino == UINT64_MAX);
	assert_string_equal(m[1].path, "/memfd:x (deleted)");
	assert_string_equal(m[2].path, "[stack]");
	assert_true(m[3].start == 0xffffffffff600000ull);
	assert_int_equal(m[3].prot, PROT_EXEC);
	assert_string_equal(m[4].path, "");
	assert_int_equal(m[4].prot, 0);
	maps_free(m, n);
}

static void maps_truncated(void **state)
{
	struct maps_entry *m;
	/* a line cut short (the read ended there) is no region; the next one is */
	size_t n = parse("7f0000000000-7f0000001000 rw-p 0000\n"
			 "7f0000000000-7f0000001000 rw-p 00000000 00:00\n"
			 "7f0000002000-7f0000003000 r--p 00000000 00:00 0\n"
			 "7f0000004000-7f00", 0, &m);

	assert_int_equal(n, 1);
	assert_int_equal(m[0].start, 0x7f0000002000);
	assert_string_equal(m[0].path, "");
	maps_free(m, n);
	n = parse("", 0, &m);
	assert_int_equal(n, 0);
	maps_free(m, n);
}

static void smaps_flags(void **state)
{
	struct maps_entry *m;
	size_t n = parse("VmFlags: dc\n"	/* before any region: no one's */
			 "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n"
			 "Size:               2048 kB\n"
			 "AnonHugePages:      2048 kB\n"
			 "VmFlags: rd wr mr mw me dc ac sd um uw\n"
			 "7f0000200000-7f0000201000 rw-p 00000000 00:00 0   /a file\n"
			 "AnonHugePages:         0 kB\n"
			 "ProtectionKey:         0\n"
			 "VmFlags: rd wr mr mw me gd ac lo dp\n"
			 "7f0000300000-7f0000301000 r--p 00000000 00:00 0\n"
			 "ProtectionKey:         3\n"
			 "VmFlags: rd mr me wf", 1, &m);	/* the last flag ends the text */

	assert_int_equal(n, 3);
	assert_int_equal(m[0].vmflags, VMF_MAYWRITE | VMF_DONTFORK | VMF_ACCOUNT | VMF_THP);
	assert_string_equal(m[1].path, "/a file");
	assert_int_equal(m[1].vmflags, VMF_MAYWRITE | VMF_GROWSDOWN | VMF_ACCOUNT | VMF_LOCKED |
			 VMF_DROPPABLE);
	assert_int_equal(m[2].vmflags, VMF_WIPEONFORK | VMF_PKEY);
	maps_free(m, n);
	/* maps, not smaps: no flags taken even when such a line is there */
	n = parse("7f0000000000-7f0000001000 rw-p 00000000 00:00 0\nVmFlags: dc\n", 0, &m);
	assert_int_equal(n, 1);
	assert_int_equal(m[0].vmflags, 0);
	maps_free(m, n);
}

/* A stat line with all 52 fields, n of them, comm as given. */
static void stat_line(char *out, size_t len, const char *comm, int fields)
{
	int k = snprintf(out, len, "4242 (%s)", comm);

	for (int f = 3; f <= fields; f++) {
		const char *v = f == 3 ? "Z" : f == 4 ? "17" : f == 9 ? "4194564" :
				f == 22 ? "18446744073709551615" : f == 38 ? "10" :
				f == 52 ? "256" : "0";

		k += snprintf(out + k, len - (size_t)k, " %s", v);
	}
	snprintf(out + k, len - (size_t)k, "\n");
}

static void stat_fields(void **state)
{
	struct proc_stat st;
	char line[1024];

	stat_line(line, sizeof(line), "a) b (c", 52);
	assert_int_equal(proc_stat_parse(line, &st), 1);
	assert_string_equal(st.comm, "a) b (c");
	assert_int_equal(st.state, 'Z');
	assert_int_equal(st.ppid, 17);
	assert_int_equal(st.flags, 4194564);
	assert_true(st.start == 18446744073709551615ull);
	assert_int_equal(st.exit_signal, 10);
	assert_int_equal(st.exit_code, 256);
}

static void stat_short(void **state)
{
	struct proc_stat st;
	char line[1024];

	/* a kernel before 3.5 ends at field 44: no exit code */
	stat_line(line, sizeof(line), "x", 44);
	assert_int_equal(proc_stat_parse(line, &st), 1);
	assert_int_equal(st.exit_signal, 10);
	assert_int_equal(st.exit_code, 0);
	/* a name of 15 bytes of parentheses and spaces */
	stat_line(line, sizeof(line), ")) (( ) ( )) ((", 52);
	assert_int_equal(proc_stat_parse(line, &st), 1);
	assert_string_equal(st.comm, ")) (( ) ( )) ((");
	assert_int_equal(st.ppid, 17);
	/* not a stat line: no process */
	strcpy(line, "4242 (cut");
	assert_int_equal(proc_stat_parse(line, &st), 0);
	strcpy(line, "4242 (a)S 1");
	assert_int_equal(proc_stat_parse(line, &st), 0);
	strcpy(line, "4242 (a) ");
	assert_int_equal(proc_stat_parse(line, &st), 0);
	line[0] = 0;
	assert_int_equal(proc_stat_parse(line, &st), 0);
}

static void creds_fields(void **state)
{
	struct ibcr_creds c;
	struct buf g = { 0 };
	uint32_t want[70];
	char text[2048];
	int k;

	memset(&c, 0, sizeof(c));
	k = snprintf(text, sizeof(text), "Name:\tx y\nUid:\t0\t1000\t4294967295\t7\n"
		     "Gid:\t5\t6\t7\t8\nGroups:\t");
	for (int i = 0; i < 70; i++) {
		want[i] = i ? 100000u + (uint32_t)i : 4294967294u;
		k += snprintf(text + k, sizeof(text) - (size_t)k, "%u ", want[i]);
	}
	snprintf(text + k, sizeof(text) - (size_t)k,
		 "\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n"
		 "CapEff:\tffffffffffffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000400\n"
		 "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n");
	proc_creds_parse(text, &c, &g);
	assert_int_equal(c.uid[0], 0);
	assert_int_equal(c.uid[2], 4294967295u);
	assert_int_equal(c.uid[3], 7);
	assert_int_equal(c.gid[3], 8);
	assert_int_equal(g.len, sizeof(want));
	assert_memory_equal(g.p, want, sizeof(want));
	assert_true(c.cap_prm == 0x1ffffffffffull);
	assert_true(c.cap_eff == UINT64_MAX);
	assert_true(c.cap_amb == 0x400);
	assert_true(c.flags & IBCR_CREDF_NO_NEW_PRIVS);
	/* "Seccomp_filters:" (5.9) is not the mode */
	assert_int_equal(c.seccomp, 2);
	buf_free(&g);
}

static void creds_old_kernel(void **state)
{
	struct ibcr_creds c;
	struct buf g = { 0 };
	char text[] = "Uid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\nGroups:\t\n"
		      "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
		      "CapEff:\t0000000000000000\nCapBnd:\t0000003fffffffff\n";

	/* before 4.3, 4.10, 3.8: no CapAmb, NoNewPrivs, Seccomp: left as they were */
	memset(&c, 0, sizeof(c));
	c.cap_amb = 0x77;
	c.seccomp = 1;
	proc_creds_parse(text, &c, &g);
	assert_int_equal(g.len, 0);
	assert_true(c.cap_bnd == 0x3fffffffffull);
	assert_true(c.cap_amb == 0x77);
	assert_int_equal(c.seccomp, 1);
	assert_false(c.flags & IBCR_CREDF_NO_NEW_PRIVS);
	buf_free(&g);
}

static void creds_unknown_seccomp(void **state)
{
	char path[] = "/tmp/ibcr-unit-status.XXXXXX";
	int fd = mkstemp(path);
	struct ibcr_creds c;
	struct buf g = { 0 };
	struct ibcr_err e = { "" };
	static const char text[] = "Uid:\t0\t0\t0\t0\nSeccomp:\t3\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);
	memset(&c, 0, sizeof(c));
	/* a mode this build does not know is refused, by the file's name */
	assert_int_equal(proc_creds(path, &c, &g, &e), -1);
	assert_non_null(strstr(e.msg, path));
	assert_non_null(strstr(e.msg, "unknown seccomp mode 3"));
	unlink(path);
	buf_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maps_lines),
		cmocka_unit_test(maps_truncated),
		cmocka_unit_test(smaps_flags),
		cmocka_unit_test(stat_fields),
		cmocka_unit_test(stat_short),
		cmocka_unit_test(creds_fields),
		cmocka_unit_test(creds_old_kernel),
		cmocka_unit_test(creds_unknown_seccomp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
