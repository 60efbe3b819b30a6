#!/usr/bin/env bash
# Cold and warm restore against reading the image with O_DIRECT, eager
# and lazy (restart-loader --lazy: until running, until fully restored).
# One run, each size: bench/restore_cold.sh [SIZE...] (default 1G 4G).
# Prints one line per (size, way): restore_ms (until running), full_ms.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=${IBCR_BUILD:-$TOP/build}
D=$(mktemp -d "${IBCR_BENCH_DIR:-$B/bench}/cold.XXXXXX")
trap 'rm -rf "$D"' EXIT
uncache() { "$B/tests/progs/imgtool" uncache "$1"; }

# restore IMG ARGS...: runs the loader, waits for its stats, kills the program
restore() {
	local img=$1 err=$D/loader.err i
	shift
	: >"$err"
	"$B/restart-loader" --stats "$@" "$img" >/dev/null 2>"$err" &
	local lpid=$!
	for ((i = 0; i < 1200; i++)); do
		if grep -q '^ibcr-stats: restore_ms' "$err" &&
			{ [ "$*" != "${*#--lazy}" ] || [ "$*" = "" ] || true; } &&
			{ ! printf '%s' "$*" | grep -q -- --lazy || grep -q lazy_fill_ms "$err"; }; then
			break
		fi
		sleep 0.05
	done
	local run full
	run=$(sed -n 's/^ibcr-stats: restore_ms=\([0-9.]*\).*/\1/p' "$err")
	full=$(sed -n 's/^ibcr-stats: lazy_fill_ms=.* full_ms=\([0-9.]*\).*/\1/p' "$err")
	pkill -9 -P "$lpid" 2>/dev/null
	kill -9 "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	echo "${run:-?} ${full:-$run}"
}

for size in "${@:-1G 4G}"; do
	for s in $size; do
		"$B/tests/progs/clean-exec" "$B/bench/workload" -k incompressible -s "$s" \
			</dev/null >"$D/w.out" 2>&1 &
		wpid=$!
		for ((i = 0; i < 1200; i++)); do grep -q '^ready' "$D/w.out" && break; sleep 0.1; done
		"$B/saver" --kill -o "$D/img.ckpt" "$wpid" 2>"$D/saver.err" ||
			{ echo "saver failed: $(cat "$D/saver.err")"; exit 1; }
		wait "$wpid" 2>/dev/null
		uncache "$D/img.ckpt"
		t0=$(date +%s.%N)
		dd if="$D/img.ckpt" of=/dev/null bs=4M iflag=direct 2>/dev/null
		direct=$(echo "($(date +%s.%N) - $t0) * 1000" | bc)
		printf '%s direct_read_ms=%.0f\n' "$s" "$direct"
		for way in "cold" "cold --lazy" "warm" "warm --lazy"; do
			set -- $way
			temp=$1
			shift
			if [ "$temp" = cold ]; then uncache "$D/img.ckpt"; else cat "$D/img.ckpt" >/dev/null; fi
			read -r run full < <(restore "$D/img.ckpt" "$@")
			printf '%s %s%s running_ms=%s full_ms=%s\n' "$s" "$temp" "${1:+ $1}" "$run" "$full"
		done
		rm -f "$D/img.ckpt"
	done
done
