// SPDX-License-Identifier: MIT
/*
 * Unit tests of the fdinfo parsers (saver/fdinfo.c) on the text of
 * /proc/PID/fdinfo/FD as kernels write it: keys that are the tails of
 * other keys, the largest values, lines cut short, fields that older
 * kernels or a kernel without exportfs do not show.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "saver/fdinfo.h"

static const char timerfd[] = "pos:\t0\nflags:\t02004002\nmnt_id:\t15\nino:\t1057\n"
			      "clockid: 1\nticks: 18446744073709551615\nsettime flags: 01\n"
			      "it_value: (0, 5)\nit_interval: (0, 0)";

static void field_at_line_start(void **state)
{
	uint64_t v = 7;

	assert_int_equal(fdinfo_field(timerfd, "clockid:", 10, &v), 1);
	assert_int_equal(v, 1);
	assert_int_equal(fdinfo_field(timerfd, "ticks:", 10, &v), 1);
	assert_true(v == UINT64_MAX);
	/* "settime flags:" is its own line, not the description's "flags:" */
	assert_int_equal(fdinfo_field(timerfd, "settime flags:", 8, &v), 1);
	assert_int_equal(v, 1);
	assert_int_equal(fdinfo_field(timerfd, "flags:", 8, &v), 1);
	assert_int_equal(v, 02004002);
	/* a key only inside a line is not there */
	v = 7;
	assert_int_equal(fdinfo_field(timerfd, "value:", 10, &v), 0);
	assert_int_equal(fdinfo_field(timerfd, "eventfd-semaphore:", 10, &v), 0);
	assert_int_equal(fdinfo_field("", "pos:", 10, &v), 0);
	assert_int_equal(v, 7);
	/* the last line, without its newline; hexadecimal */
	assert_int_equal(fdinfo_field("pos:\t0\nsigmask:\t0000000000004a02", "sigmask:", 16, &v), 1);
	assert_int_equal(v, 0x4a02);
}

static void pos_and_flags(void **state)
{
	uint64_t pos = 9;
	uint32_t flags = 9;

	fdinfo_pos_flags("pos:\t18446744073709551615\nflags:\t0100002\nmnt_id:\t29\n", &pos, &flags);
	assert_true(pos == UINT64_MAX);
	assert_int_equal(flags, 0100002);
	fdinfo_pos_flags(timerfd, &pos, &flags);
	assert_int_equal(pos, 0);
	assert_int_equal(flags, 02004002);	/* not settime flags' 01 */
	/* missing: left as they were */
	pos = 9, flags = 9;
	fdinfo_pos_flags("mnt_id:\t29\n", &pos, &flags);
	assert_int_equal(pos, 9);
	assert_int_equal(flags, 9);
}

static void epoll_entries(void **state)
{
	uint64_t data = 0;
	uint32_t events = 0;
	int tfd = 0;

	assert_int_equal(fdinfo_epoll_entry("tfd:        5 events:       19 data:     7f0000000005"
					    "  pos:0 ino:41 sdev:f", &tfd, &events, &data), 0);
	assert_int_equal(tfd, 5);
	assert_int_equal(events, 0x19);
	assert_true(data == 0x7f0000000005ull);
	assert_int_equal(fdinfo_epoll_entry("tfd: 1048575 events: 8000001d data: ffffffffffffffff",
					    &tfd, &events, &data), 0);
	assert_int_equal(tfd, 1048575);
	assert_int_equal(events, 0x8000001d);	/* EPOLLET */
	assert_true(data == UINT64_MAX);
	/* cut short: no entry */
	assert_int_equal(fdinfo_epoll_entry("tfd: 5 events: 19", &tfd, &events, &data), -1);
	assert_int_equal(fdinfo_epoll_entry("tfd: 5 events: 19 data:", &tfd, &events, &data), -1);
	assert_int_equal(fdinfo_epoll_entry("pos:\t0", &tfd, &events, &data), -1);
}

static void inotify_watches(void **state)
{
	struct fdinfo_watch w;

	memset(&w, 0xff, sizeof(w));
	assert_int_equal(fdinfo_inotify_watch("inotify wd:3 ino:fffffffffffffffe sdev:800001 "
					      "mask:8000002 ignored_mask:0 fhandle-bytes:8 "
					      "fhandle-type:1 f_handle:2b1a0000fe0a1b2c", &w), 0);
	assert_int_equal(w.wd, 3);
	assert_true(w.ino == 0xfffffffffffffffeull);
	assert_int_equal(major(w.dev), 8);
	assert_int_equal(minor(w.dev), 1);
	assert_int_equal(w.mask, 0x8000002);
	assert_int_equal(w.hbytes, 8);
	assert_int_equal(w.htype, 1);
	assert_string_equal(w.handle, "2b1a0000fe0a1b2c");
	/* a kernel without exportfs shows no handle */
	assert_int_equal(fdinfo_inotify_watch("inotify wd:a ino:2 sdev:fd00003 mask:100 "
					      "ignored_mask:0", &w), 0);
	assert_int_equal(w.wd, 10);
	assert_int_equal(major(w.dev), 0xfd);
	assert_int_equal(minor(w.dev), 3);
	assert_int_equal(w.hbytes, 0);
	/* cut before the mask: no watch */
	assert_int_equal(fdinfo_inotify_watch("inotify wd:1 ino:2 sdev:800001", &w), -1);
	assert_int_equal(fdinfo_inotify_watch("pos:\t0", &w), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(field_at_line_start),
		cmocka_unit_test(pos_and_flags),
		cmocka_unit_test(epoll_entries),
		cmocka_unit_test(inotify_watches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
