#!/usr/bin/env bash
# Credentials come back exactly, per thread: a process that set 40
# supplementary groups, four different uids and gids, five different
# capability sets (ambient too), locked securebits, no_new_privs, a
# loginuid and dumpable 0, with a second thread of another effective uid
# and effective capabilities (tests/progs/creds.c), checks its own state
# after each of two checkpoint (--tree --kill) and restart cycles, and
# /proc shows the same credentials for every thread as before: a restore
# by root must not hand it root's capabilities. As an ordinary user:
# no_new_privs comes back in a checkpoint and restore by that user; and
# that user's restart-loader refuses the root-made image (it cannot give
# another user's identity) with one line, before it starts anything.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/priv.sh"
is_root || fail "this test sets credentials as root and drops to nobody; run it as root"

# creds_of PID: what /proc says of every thread's credentials
creds_of() {
	local t
	for t in "/proc/$1/task/"*; do
		echo "thread ${t##*/}"
		grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' "$t/status"
		echo "loginuid $(cat "$t/loginuid")"
	done
}

start "$T/prog.out" "$PROGS/creds" root 100 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
creds_of "$pid" >"$T/state.before"
grep -q 'CapEff:.*0000000000000421' "$T/state.before" ||
	fail "the program did not lower its capabilities: $(cat "$T/state.before")"
two_cycles creds_of --tree --kill
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
grep -q 'eff 0000000000000421 .* no_new_privs' "$T/info.out" ||
	fail "ckpt-info does not show the capabilities: $(grep -A1 ' uid ' "$T/info.out")"

# An ordinary user: its own process with no_new_privs, saved and restored
# by that user.
for_nobody
: >"$T/user.out"
chmod 666 "$T/user.out"
start "$T/user.out" "$PROGS/runas" 65534 65534 "$PROGS/creds" user 40 50
upid=$PID
wait_line "$T/user.out" '^tick 5 '
as_nobody "$SAVER" --kill -o "$T/user.ckpt" "$upid" 2>"$T/saver.err" ||
	fail "the user's saver failed: $(cat "$T/saver.err")"
wait "$upid" 2>/dev/null || true
before=$(last_tick "$T/user.out")
LOADER_OUT=$T/user-loader.out restart_as_nobody "$T/user.ckpt"
wait_line "$T/user.out" "^tick $((before + 3)) "
wait "$LPID" || fail "as a user: the restored program exited with status $?: $(grep FAIL "$T/user.out")"
grep -q FAIL "$T/user.out" && fail "as a user: $(grep FAIL "$T/user.out")"
grep -q '^DONE' "$T/user.out" || fail "as a user: the program did not finish"
assert_ticks_continuous "$T/user.out"

# That user cannot restore the root-made image: refused with one line,
# nothing started.
chmod 644 "$T/img1.ckpt"
restart_refused "$T/img1.ckpt" "ran as uid 1001/1002/1003/1004 gid 2001/2002/2003/2004 with 40 groups" as_nobody
grep -qE "^restart-loader: pid [0-9]+ thread [0-9]+: ran as uid .*root" "$T/refused.out" ||
	fail "a user's restore of root's image did not name pid and thread: $(cat "$T/refused.out")"
[ "$(wc -l <"$T/refused.out")" = 1 ] || fail "more than one line: $(cat "$T/refused.out")"
exit 0
