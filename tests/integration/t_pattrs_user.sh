#!/usr/bin/env bash
# The process attributes of t_pattrs, as an ordinary user: a program run
# as nobody raises its oom_score_adj, becomes a child subreaper, turns
# THP off and registers for membarrier (all unprivileged); nobody
# checkpoints it (--kill) and restores it, and it finds them all again.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
for_nobody

start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/pattrs"
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
checkpoint_as_nobody "$pid" "$T/img.ckpt" --kill
wait "$pid" 2>/dev/null || true
before=$(last_tick "$T/prog.out")
restart_as_nobody "$T/img.ckpt"
wait_line "$T/prog.out" "^tick $((before + 3)) "
[ "$(cat "/proc/$RPID/oom_score_adj")" = 345 ] || fail "oom_score_adj is $(cat "/proc/$RPID/oom_score_adj"), was 345"
grep -qx "Uid:	65534	65534	65534	65534" <(grep '^Uid:' "/proc/$RPID/status") || fail "restored process does not run as nobody"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
kill "$RPID"
wait "$LPID" 2>/dev/null || true
assert_ticks_continuous "$T/prog.out"
exit 0
