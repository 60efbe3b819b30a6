#!/usr/bin/env bash
# Process attributes come back: oom_score_adj, PR_SET_CHILD_SUBREAPER,
# PR_SET_THP_DISABLE and the membarrier registrations (global expedited,
# and SYNC_CORE, whose registration does not make plain private expedited
# work), which the program checks every tick; after a live checkpoint and
# after --kill and restart. An image whose oom_score_adj is below what
# the restorer may set (lowering it needs CAP_SYS_RESOURCE, which root
# lacks here) is refused before anything is made, naming it.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/pattrs"
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
[ "$(cat "/proc/$pid/oom_score_adj")" = 345 ] || fail "program did not set its oom_score_adj"
checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
grep -q '^  attrs: oom_score_adj 345 .* subreaper' "$T/info.out" ||
	fail "ckpt-info does not show the attributes: $(grep attrs: "$T/info.out")"

checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")

# below ours, and below what any write without CAP_SYS_RESOURCE may set
cap_sys_resource=$(((0x$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status) >> 24) & 1))
own=$(cat /proc/self/oom_score_adj)
if [ "$cap_sys_resource" = 1 ]; then
	note "this restorer holds CAP_SYS_RESOURCE: any oom_score_adj is allowed, no refusal to check"
else
	[ "$own" -gt -500 ] || fail "this test needs a restorer whose oom_score_adj is above -500, not $own"
	cp "$T/img.ckpt" "$T/low.ckpt"
	"$PROGS/imgtool" set-oom "$T/low.ckpt" -500
	restart_refused "$T/low.ckpt" \
		"pid $pid: oom_score_adj -500 is below ours ($own), and lowering it needs CAP_SYS_RESOURCE"
	[ "$(last_tick "$T/prog.out")" = "$before" ] || fail "the refused restore ran the program"
fi

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
[ "$(cat "/proc/$RPID/oom_score_adj")" = 345 ] || fail "oom_score_adj is $(cat "/proc/$RPID/oom_score_adj"), was 345"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
kill "$RPID"
wait "$LPID" 2>/dev/null || true
assert_ticks_continuous "$T/prog.out"
exit 0
