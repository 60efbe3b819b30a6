#!/usr/bin/env bash
# saver --direct writes the page data past the page cache and --cached
# through it; by default a large image goes direct and a small one not
# (saver/direct.c). A direct image is found out of the page cache (but
# for its last partial MiB and a header), a cached one in it; each way
# the restored program finds its 64 MiB heap unchanged and goes on
# counting under its pid.
. "$(dirname "$0")/lib.sh"

# stats_field NAME: a number from the saver's ibcr-stats line
stats_field() { sed -n "s/^ibcr-stats:.* $1=\\([0-9]*\\).*/\\1/p" "$T/saver.err"; }

# a dirty background limit far below the heap: "large" by default
# (0 bytes means the ratio rules; setting the ratio sets bytes to 0)
bg_bytes=$(cat /proc/sys/vm/dirty_background_bytes)
bg_ratio=$(cat /proc/sys/vm/dirty_background_ratio)
restore_limit() {
	if [ "$bg_bytes" = 0 ]; then
		echo "$bg_ratio" >/proc/sys/vm/dirty_background_ratio
	else
		echo "$bg_bytes" >/proc/sys/vm/dirty_background_bytes
	fi
}
trap 'restore_limit; cleanup' EXIT
echo $((4 << 20)) >/proc/sys/vm/dirty_background_bytes

for how in --direct --cached default; do
	rm -f "$T/prog.out"
	start "$T/prog.out" "$PROGS/heap" 1000 50
	pid=$PID
	wait_line "$T/prog.out" '^tick 3 '
	# not lib.sh's checkpoint: its ckpt-info --verify reads the image
	# into the page cache before it could be looked at
	# shellcheck disable=SC2046 # no word, or one
	"$SAVER" --kill --stats $([ $how = default ] || echo $how) -o "$T/img.ckpt" "$pid" \
		2>"$T/saver.err" || fail "$how: saver failed: $(cat "$T/saver.err")"
	wait "$pid" 2>/dev/null || true
	size=$(stat -c %s "$T/img.ckpt")
	direct=$(stats_field direct_bytes)
	[ -n "$direct" ] || fail "$how: no direct_bytes in: $(cat "$T/saver.err")"
	# whole 1 MiB buffers go direct, the tail through the page cache;
	# the saver's count is checked against what the cache holds (mincore)
	cached=$("$PROGS/imgtool" cached "$T/img.ckpt") || fail "imgtool cached failed"
	"$INFO" --verify "$T/img.ckpt" >"$T/info.out" 2>&1 || fail "$how: ckpt-info --verify failed"
	case $how in
	--cached)
		[ "$direct" = 0 ] || fail "$how: $direct bytes written directly"
		[ "$cached" -ge $((size * 9 / 10)) ] ||
			fail "$how: only $cached of $size bytes in the page cache" ;;
	*)
		[ "$direct" = $((size >> 20 << 20)) ] ||
			fail "$how: $direct of $size bytes written directly"
		# the tail, and the page of the PAGES header written at commit
		[ "$cached" -le $((size - direct + 2 * 4096)) ] ||
			fail "$how: $cached of $size bytes in the page cache after a direct write" ;;
	esac
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	before=$(last_tick "$T/prog.out")
	wait_line "$T/prog.out" "^tick $((before + 2)) pid $RPID\$"
	grep -q FAIL "$T/prog.out" && fail "$how: the program found its heap changed"
	assert_ticks_continuous "$T/prog.out"
	kill -9 "$RPID"
	wait "$LPID" 2>/dev/null || true
	note "$how: $direct of $size bytes direct, $cached in the page cache"
done

# a file system without direct I/O (ramfs): --direct writes through the
# cache without a word, and the image restores as well
mkdir "$T/ramfs"
mount -t ramfs ibcr-ramfs "$T/ramfs" || fail "cannot mount a ramfs on $T/ramfs"
trap 'umount "$T/ramfs" 2>/dev/null || true; restore_limit; cleanup' EXIT
rm -f "$T/prog.out"
start "$T/prog.out" "$PROGS/heap" 1000 50
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$pid" "$T/ramfs/img.ckpt" --kill --stats --direct
wait "$pid" 2>/dev/null || true
[ "$(stats_field direct_bytes)" = 0 ] || fail "--direct on a ramfs: $(cat "$T/saver.err")"
restart "$T/ramfs/img.ckpt"
expect_pid "$pid" "$RPID"
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 2)) pid $RPID\$"
grep -q FAIL "$T/prog.out" && fail "--direct on a ramfs: the program found its heap changed"
kill -9 "$RPID"
wait "$LPID" 2>/dev/null || true
rm -f "$T/ramfs/img.ckpt"
umount "$T/ramfs"

# below the limit, the default writes through the page cache
echo $((1 << 30)) >/proc/sys/vm/dirty_background_bytes
rm -f "$T/prog.out"
start "$T/prog.out" "$PROGS/heap" 1000 50
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$PID" "$T/small.ckpt" --kill --stats
[ "$(stats_field direct_bytes)" = 0 ] || fail "default below the limit: $(cat "$T/saver.err")"
exit 0
