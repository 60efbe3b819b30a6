#!/usr/bin/env bash
# restart-loader --check (issue 19; as `criu check`): one line per
# capability, "NAME ok|no|limited what-it-means", each verdict what this
# process can really do (root here: all but CAP_SYS_RESOURCE; nobody:
# no chosen pids, no TCP repair, none of the capabilities), and exit 0
# when checkpoint and restore work, for root and for nobody; it takes no
# image (a usage error).
. "$(dirname "$0")/lib.sh"

is_root || fail "this test needs root (and nobody)"
NAMES=(ptrace vdso userfaultfd "clone3 set_tid" pidfd_getfd "tcp repair" CAP_CHECKPOINT_RESTORE
	CAP_SYS_ADMIN CAP_NET_ADMIN CAP_SYS_PTRACE CAP_SYS_RESOURCE nft)
# verdict OUT NAME: the verdict of NAME's line
verdict() { sed -n "s/^$2 \{1,\}\(ok\|no\|limited\) .*/\1/p" "$1"; }
cap() { local c; c=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status); echo $(((0x$c >> $1) & 1)); }

for who in root nobody; do
	st=0
	if [ $who = root ]; then
		"$LOADER" --check >"$T/$who.out" 2>"$T/$who.err" || st=$?
	else
		chmod 755 "$T"
		"$PROGS/runas" 65534 65534 "$LOADER" --check >"$T/$who.out" 2>"$T/$who.err" || st=$?
	fi
	[ "$st" = 0 ] || fail "--check as $who: status $st: $(cat "$T/$who.out" "$T/$who.err")"
	[ ! -s "$T/$who.err" ] || fail "--check as $who wrote on stderr: $(cat "$T/$who.err")"
	for n in "${NAMES[@]}"; do
		v=$(verdict "$T/$who.out" "$n")
		[ -n "$v" ] || fail "--check as $who: no line for $n: $(cat "$T/$who.out")"
	done
	[ "$(wc -l <"$T/$who.out")" = $((${#NAMES[@]} + 1)) ] ||
		fail "--check as $who: not one line per capability and a summary: $(cat "$T/$who.out")"
	tail -n 1 "$T/$who.out" | holds '^checkpoint and restore work here' ||
		fail "--check as $who: summary: $(tail -n 1 "$T/$who.out")"
	[ "$(verdict "$T/$who.out" ptrace)" = ok ] || fail "--check as $who: ptrace: $(grep ^ptrace "$T/$who.out")"
	[ "$(verdict "$T/$who.out" vdso)" = ok ] || fail "--check as $who: vdso: $(grep ^vdso "$T/$who.out")"
	grep -q '^vdso .*\[vdso\]' "$T/$who.out" || fail "--check as $who names no [vdso]"
done
# the verdicts are what each can do
[ "$(verdict "$T/root.out" "clone3 set_tid")" = ok ] || fail "root cannot choose pids? $(grep clone3 "$T/root.out")"
[ "$(verdict "$T/nobody.out" "clone3 set_tid")" = limited ] || fail "nobody chooses pids? $(grep clone3 "$T/nobody.out")"
[ "$(verdict "$T/root.out" "tcp repair")" = ok ] || fail "root has no TCP repair? $(grep tcp "$T/root.out")"
[ "$(verdict "$T/nobody.out" "tcp repair")" = limited ] || fail "nobody has TCP repair? $(grep tcp "$T/nobody.out")"
for c in CAP_CHECKPOINT_RESTORE:40 CAP_SYS_ADMIN:21 CAP_NET_ADMIN:12 CAP_SYS_PTRACE:19 CAP_SYS_RESOURCE:24; do
	want=limited
	[ "$(cap "${c#*:}")" = 1 ] && want=ok
	[ "$(verdict "$T/root.out" "${c%:*}")" = $want ] || fail "root: ${c%:*}: $(grep "^${c%:*}" "$T/root.out"), expected $want"
	[ "$(verdict "$T/nobody.out" "${c%:*}")" = limited ] || fail "nobody: ${c%:*}: $(grep "^${c%:*}" "$T/nobody.out")"
done
[ -x /usr/sbin/nft ] && want=ok || want=limited
[ "$(verdict "$T/root.out" nft)" = $want ] || fail "nft: $(grep ^nft "$T/root.out"), expected $want"
st=0
"$LOADER" --check "$T/x.ckpt" >/dev/null 2>&1 || st=$?
[ "$st" = 2 ] || fail "--check IMAGE: status $st, not 2"
exit 0
