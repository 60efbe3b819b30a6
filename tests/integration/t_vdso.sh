#!/usr/bin/env bash
# The vdso proxy, forced on this kernel (IBCR_VDSO_PROXY=1, as a restore
# on another kernel does it): vdsoclock keeps pointers into its [vdso]
# and calls them every tick, checking each answer against the system
# call. Restored with the proxy, the old [vdso] address holds the saved
# bytes (now anonymous, r-x) and this kernel's [vdso] is elsewhere; the
# kept pointers must still give right answers. Then the restored process
# is checkpointed and restored again, normally: the proxy is memory of
# its own now. Last, a saved vdso whose function (gettimeofday) has
# neither a twin in this kernel's vdso nor a stand-in is refused, named.
. "$(dirname "$0")/lib.sh"

vdso_of() { awk '$6 == "[vdso]" { print $1 }' "/proc/$1/maps"; }

start "$T/prog.out" "$PROGS/vdsoclock" 400 30
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
old=$(vdso_of "$pid")
[ -n "$old" ] || fail "no [vdso] in the program's maps"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
LOADER_ARGS= IBCR_VDSO_PROXY=1 restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 5)) "
new=$(vdso_of "$RPID")
[ -n "$new" ] && [ "$new" != "$old" ] ||
	fail "the [vdso] did not move (before $old, after ${new:-none}): no proxy?"
grep -q "^${old} r-xp 00000000 00:00 0 *\$" <(awk '{ print $1, $2, $3, $4, $5, $6 }' "/proc/$RPID/maps") ||
	fail "no proxy (anonymous r-xp) at the old [vdso] $old: $(grep -F "${old%-*}" "/proc/$RPID/maps")"
grep -q FAIL "$T/prog.out" && fail "the program found a wrong answer: $(grep FAIL "$T/prog.out")"

# the proxied process, checkpointed and restored again (same kernel)
checkpoint "$RPID" "$T/img2.ckpt" --kill
wait "$LPID" 2>/dev/null || true
before=$(last_tick "$T/prog.out")
restart "$T/img2.ckpt"
wait_line "$T/prog.out" "^tick $((before + 5)) "
[ "$(vdso_of "$RPID")" = "$new" ] || fail "second restore: [vdso] not back at $new"
wait "$LPID" || fail "restored program exited with status $?"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
grep -q FAIL "$T/prog.out" && fail "the program found a wrong answer: $(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"

# a saved entry point that nothing can stand in for: refused, named
start "$T/prog2.out" "$PROGS/vdsoclock" 400 30
pid=$PID
wait_line "$T/prog2.out" '^tick 3 '
checkpoint_kill "$pid" "$T/img3.ckpt"
"$PROGS/imgtool" vdso-rename "$T/img3.ckpt" gettimeofday gettimeofdaX ||
	fail "imgtool vdso-rename failed"
if IBCR_VDSO_PROXY=1 "$LOADER" "$T/img3.ckpt" >"$T/refused.out" 2>&1; then
	fail "restored a vdso whose gettimeofdaX nothing can stand in for"
fi
grep -q "gettimeofdaX" "$T/refused.out" ||
	fail "the refusal does not name the function: $(cat "$T/refused.out")"
grep -q "^tick" "$T/refused.out" && fail "the refused process ran"
exit 0
