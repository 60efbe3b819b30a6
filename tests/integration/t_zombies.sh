#!/usr/bin/env bash
# Zombies come back in their process groups: a parent with two unreaped
# children, one leading a group and one in that group
# (tests/progs/zombies.c, which checks them every tick and finally reaps
# them, exit statuses 3 and 4), checkpointed with --tree --kill and
# restarted.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/zombies" 40 100
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
read -r a b <<<"$(sed -n 's/^zombies \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$T/prog.out")"
[ "$(pgid_of "$b")" = "$a" ] || fail "zombie $b is not in group $a before the checkpoint"
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
# the zombies go once their killed parent's children are reaped
for ((i = 0; i < 200; i++)); do [ -e "/proc/$a" ] || [ -e "/proc/$b" ] || break; sleep 0.05; done
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
for z in "$a" "$b"; do
	[ "$(stat_field "$z" 3)" = Z ] || fail "pid $z is not a zombie after the restore"
	[ "$(pgid_of "$z")" = "$a" ] || fail "zombie $z is in group $(pgid_of "$z"), not $a"
done
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
