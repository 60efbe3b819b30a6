#!/usr/bin/env bash
# tests/vm/xkernel.sh - restores across kernels: the vdso proxy for real.
#
# vdsoclock (tests/progs/vdsoclock.c) keeps pointers into its [vdso] and
# checks every answer against the system call. It is checkpointed on one
# kernel and restored on another, in three boots of the x86 guest
# (tools/vm/x86-vm.sh) with Debian's 6.1 and 6.12 kernels and the host's:
#
#   host            images "host" and "hostb" (started with a CPU baseline) made
#   boot 1 (6.1)    "host" refused by the CPU check (see below), "hostb"
#                   restored with --cpu-check=in-use (host -> 6.1); image "g61"
#   host            "g61" restored (6.1 -> host)
#   boot 2 (6.12)   "g61" restored (6.1 -> 6.12), "hostb" (host -> 6.12);
#                   image "g612"
#   boot 3 (6.1)    "g612" restored (6.12 -> 6.1)
#   host            "g612" restored (6.12 -> host)
#
# A restore passes when the loader used the proxy (its trace says so: the
# kernels' vdsos differ), the program's ticks go on from where they were
# and it ends with DONE and no FAIL. The guests run qemu's "max" CPU
# without PKU and MPX, whose state this host's kernel cannot take. The
# other way, the host's kernel enables AVX-512 state, which no TCG guest
# has: its images are refused in the guest by the CPU check, naming the
# state components ("host"); a program started with glibc's AVX-512 off
# (GLIBC_TUNABLES) holds none of that state, and restart-loader
# --cpu-check=in-use restores it there ("hostb").
#
# Prints PASS/FAIL per check and "xkernel: N passed, M failed"; exits
# non-zero on any failure. Needs root (the harness). Images and logs are
# kept in build/xkernel-logs when something failed. IBCR_BUILD=DIR takes
# the programs and tests from DIR instead of build/.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${IBCR_BUILD:-$ROOT/build}
PROGS=$B/tests/progs
CPU="-cpu max,pku=off,mpx=off"

# make_image NAME: vdsoclock (150 ticks, 30 ms: time for a saver under TCG)
# checkpointed (--kill) into $RW/NAME.ckpt; its
# output before the checkpoint in NAME.made.out. Its stdout and stderr
# are a pipe to the outside: restored, it writes to the loader's.
make_image() {
	local name=$1 pid i job
	# "...b": a program that leaves AVX-512 alone (glibc would pick it here)
	[[ $name != *b ]] || export GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512VL,-AVX512DQ,-AVX512BW
	# with the host's capabilities at most: a guest's root has all, this
	# host's may lack some (CAP_SYS_RESOURCE here), and a restore that
	# would give a program more than the loader has is refused
	local pre=()
	[ -s "$RW/host.bnd" ] && pre=(setpriv --bounding-set "-all,$(cat "$RW/host.bnd")" --)
	# its own shell, quiet: the job report of the kill is not a result
	OUT=$RW/$name.made.out bash -c '"$@" 150 30 </dev/null 2>&1 | cat >"$OUT"' _ \
		${pre[@]+"${pre[@]}"} "$PROGS/clean-exec" "$PROGS/vdsoclock" 2>/dev/null &
	job=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^tick 3 ' "$RW/$name.made.out" 2>/dev/null && break
		sleep 0.1
	done
	pid=$(sed -n 's/^tick 3 pid \([0-9]*\)$/\1/p' "$RW/$name.made.out")
	[ -n "$pid" ] || { echo "FAIL make-$name: vdsoclock did not start"; return 1; }
	if ! "$B/saver" --kill -o "$RW/$name.ckpt" "$pid" 2>"$RW/$name.saver.err"; then
		echo "FAIL make-$name: saver: $(cat "$RW/$name.saver.err")"
		return 1
	fi
	wait "$job"
	unset GLIBC_TUNABLES
	echo "PASS make-$name (on $(uname -r))"
}

# restore_image NAME TAG [LOADER-ARGS...]: restores $RW/NAME.ckpt here and checks it.
restore_image() {
	local name=$1 tag=$2 out=$RW/$1.$2.out err=$RW/$1.$2.err rc=0 last first
	shift 2
	IBCR_TRACE=1 timeout 600 "$B/restart-loader" "$@" "$RW/$name.ckpt" >"$out" 2>"$err" || rc=$?
	last=$(sed -n 's/^tick \([0-9]*\) .*/\1/p' "$RW/$name.made.out" | tail -n 1)
	first=$(sed -n 's/^tick \([0-9]*\) .*/\1/p' "$out" | head -n 1)
	if ((rc != 0)); then
		echo "FAIL $tag: restart-loader exited with $rc: $(grep -v '^restart-loader: trace' "$err" | tail -n 3)"
	elif ! grep -qE 'trace: ([0-9.]+ ms: )?vdso proxy: ' "$err"; then
		echo "FAIL $tag: no vdso proxy (the kernels' vdsos were the same?)"
	elif grep -q FAIL "$out"; then
		echo "FAIL $tag: the program found a wrong answer: $(grep FAIL "$out")"
	elif ! grep -q '^DONE' "$out" || [ "$first" != $((last + 1)) ]; then
		echo "FAIL $tag: ticks did not go on from $last (first after the restore: ${first:-none})"
	else
		echo "PASS $tag ($(sed -n 's/.*vdso proxy: \([0-9]*\) entry.*/\1/p' "$err") entry points redirected)"
		return 0
	fi
	return 1
}

# refused_image NAME TAG: the restore of NAME must be refused by the CPU check.
refused_image() {
	local name=$1 tag=$2 err=$RW/$1.$2.err
	if timeout 300 "$B/restart-loader" "$RW/$name.ckpt" >"$RW/$name.$tag.out" 2>"$err"; then
		echo "FAIL $tag: restored, where this CPU lacks state components of the image's"
	elif ! grep -q 'CPU state components' "$err"; then
		echo "FAIL $tag: refused for another reason: $(cat "$err")"
	else
		echo "PASS $tag (refused: $(sed 's/^restart-loader: //' "$err"))"
		return 0
	fi
	return 1
}

if [ "${1:-}" = --guest ]; then	# in a guest: PHASE RW
	RW=$3
	cd "$RW" || exit 2
	case $2 in
	boot1) refused_image host host-to-6.1
		restore_image hostb host-to-6.1-baseline --cpu-check=in-use
		make_image g61 ;;
	boot2) restore_image g61 6.1-to-6.12
		restore_image hostb host-to-6.12-baseline --cpu-check=in-use
		make_image g612 ;;
	boot3) restore_image g612 6.12-to-6.1 ;;
	*) exit 2 ;;
	esac
	exit 0
fi

cd "$ROOT" || exit 2
[ -n "${IBCR_BUILD:-}" ] || make -s all progs >/dev/null ||
	{ echo "xkernel: make failed" >&2; exit 1; }
mkdir -p "$B"
RW=$(mktemp -d "$B/xkernel-rw.XXXXXX")
LOG=$RW/log
passed=0
failed=0
t0=$SECONDS

# count: reads PASS/FAIL lines, echoes and counts them
count() {
	local line
	while IFS= read -r line; do
		echo "$line"
		case $line in
		PASS*) passed=$((passed + 1)) ;;
		FAIL*) failed=$((failed + 1)) ;;
		esac
	done
}

# The 6.12 kernel's ABI, as Debian names it now (else the newest cached).
kver612() {
	local k
	k=$(apt-cache depends linux-image-6.12-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([^ ]*\)$/\1/p' | head -n 1)
	[ -n "$k" ] || k=$(ls -d "${IBCR_VM_CACHE:-/var/cache/ibcr-vm}"/x86_64/6.12.* 2>/dev/null |
		sort -V | tail -n 1 | xargs -r basename)
	echo "$k"
}

# boot PHASE [KVER]: one guest running this script's PHASE
boot() {
	local phase=$1 kver=${2:-} rc=0
	echo "=== boot $phase ${kver:-(default 6.1 kernel)}"
	IBCR_VM_KVER=$kver IBCR_VM_QEMU_OPTS="$CPU ${IBCR_VM_QEMU_OPTS:-}" \
		"$ROOT/tools/vm/x86-vm.sh" --net none --timeout 1200 --rw "$RW" \
		${IBCR_BUILD:+--env "IBCR_BUILD=$IBCR_BUILD"} -- \
		bash "$ROOT/tests/vm/xkernel.sh" --guest "$phase" "$RW" >"$LOG.$phase" 2>&1 || rc=$?
	count <"$LOG.$phase"
	if ((rc != 0)); then
		echo "FAIL boot-$phase: the guest exited with status $rc: $(tail -n 5 "$LOG.$phase")"
		failed=$((failed + 1))
	fi
}

kver=$(kver612)
# the capabilities the guests' programs may have: what this host's root has
setpriv -d | sed -n 's/^Capability bounding set: //p' | sed 's/\([a-z_0-9]*\)/+\1/g' >"$RW/host.bnd"
count < <(make_image host)
count < <(make_image hostb)
boot boot1
count < <(restore_image g61 6.1-to-host)
if [ -n "$kver" ]; then
	boot boot2 "$kver"
	boot boot3
	count < <(restore_image g612 6.12-to-host)
else
	echo "FAIL boot2: no 6.12 kernel known to apt or in the cache"
	failed=$((failed + 1))
fi
echo "xkernel: $passed passed, $failed failed ($((SECONDS - t0)) s)"
if ((failed)); then
	rm -rf "$B/xkernel-logs"
	mv "$RW" "$B/xkernel-logs" && echo "xkernel: images and logs kept in build/xkernel-logs"
else
	rm -rf "$RW"
fi
((failed == 0))
