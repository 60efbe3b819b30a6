#!/usr/bin/env bash
# saver --compress (zstd, zlib, with a level) writes smaller images of a
# compressible heap, and restart-loader brings them back intact; a
# damaged compressed block stops the restore, naming the block and region.
. "$(dirname "$0")/lib.sh"

# zlib restores without a userfaultfd (the core populates, the loader
# writes), the others through one
for c in --compress --compress=zlib --compress=zstd:5; do
	[ "$c" = --compress=zlib ] && export IBCR_NO_UFFD=1
	rm -f "$T/prog.out"	# each round waits for its own program's ticks
	start "$T/prog.out" "$PROGS/heap" 40 50
	pid=$PID
	wait_line "$T/prog.out" '^tick 3 '
	maps "$pid" >"$T/maps.before"
	"$SAVER" -o "$T/raw.ckpt" "$pid" 2>"$T/saver.err" || fail "saver: $(cat "$T/saver.err")"
	checkpoint "$pid" "$T/img.ckpt" --kill "$c"
	wait "$pid" 2>/dev/null || true
	raw=$(stat -c %s "$T/raw.ckpt")
	comp=$(stat -c %s "$T/img.ckpt")
	[ "$comp" -lt $((raw / 3)) ] || fail "$c: image $comp bytes, uncompressed $raw: not 3x smaller"
	before=$(last_tick "$T/prog.out")
	rm -f "$T/loader.out"
	LOADER_ARGS=--stats restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 1)) "
	maps "$RPID" >"$T/maps.after"
	wait "$LPID" || fail "$c: restored program exited with status $?"
	grep -q '^DONE' "$T/prog.out" || fail "$c: program did not finish"
	grep -q FAIL "$T/prog.out" && fail "$c: program found its heap changed"
	assert_ticks_continuous "$T/prog.out"
	# the fast path must be the one taken, not a quiet fallback
	stats=$(grep '^ibcr-stats:' "$T/loader.out") || fail "$c: no stats: $(cat "$T/loader.out")"
	uffd=$(sed -n 's/.* uffd_kb=\([0-9]*\).*/\1/p' <<<"$stats")
	written=$(sed -n 's/.* written_kb=\([0-9]*\).*/\1/p' <<<"$stats")
	if [ -n "${IBCR_NO_UFFD:-}" ]; then
		[ "$uffd" = 0 ] && [ "$written" -gt 0 ] ||
			fail "$c: without a userfaultfd, yet: $stats"
	else
		# all but the odd read-only page (written after a populate); the
		# heap is not madvised, so it goes through the userfaultfd even
		# where THP "always" gave it huge pages (the arm64 guest)
		[ "$uffd" -gt 0 ] && [ "$written" -lt $((uffd / 100)) ] ||
			fail "$c: page data not put in through the userfaultfd: $stats"
	fi
	diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
		fail "$c: memory layout changed: $(cat "$T/maps.diff")"
	note "$c: $raw -> $comp bytes"
	unset IBCR_NO_UFFD
done

# one flipped byte inside a compressed block
rm -f "$T/prog.out"
start "$T/prog.out" "$PROGS/heap" 1000 50
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$pid" "$T/img.ckpt" --kill --compress
wait "$pid" 2>/dev/null || true
"$PROGS/imgtool" flip "$T/img.ckpt" PAGES >/dev/null ||
	fail "imgtool could not damage the image"
"$INFO" --verify "$T/img.ckpt" >"$T/verify.out" 2>&1 && fail "ckpt-info --verify accepted a damaged block"
timeout 60 "$LOADER" "$T/img.ckpt" >"$T/loader.out" 2>&1 && fail "restart-loader accepted a damaged block"
grep -Eq "page block [0-9]+ .*corrupt|header CRC|malformed" "$T/loader.out" ||
	fail "loader message does not name the block: $(cat "$T/loader.out")"
! kill -0 "$pid" 2>/dev/null || fail "a half-restored process is left running as pid $pid"
exit 0
