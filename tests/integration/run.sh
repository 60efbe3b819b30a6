#!/usr/bin/env bash
# Runs every integration test (or those named), each under a time limit,
# and prints one line per test and a summary. Exit status 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")"
LIMIT=${TEST_TIMEOUT:-300}
# busybox's timeout (in the arm64 guest) has no -k
KILL=()
timeout -k 1 1 true 2>/dev/null && KILL=(-k 10)
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
tests=("$@")
# All of them by default, except those for another architecture: a test
# that says "# arch: A B" runs only where uname -m is one of those.
[ ${#tests[@]} -gt 0 ] || for t in t_*.sh; do
	arch=$(sed -n 's/^# arch: //p' "$t")
	[ -z "$arch" ] || [[ " $arch " == *" $(uname -m) "* ]] || continue
	tests+=("$t")
done
# A test that says "# cpu: FLAG" needs that /proc/cpuinfo flag: without
# it, it is not run and the summary says so (never counted as passed).
cpu_lacks() {
	local flag
	flag=$(sed -n 's/^# cpu: //p' "$1")
	[ -n "$flag" ] && ! grep -qw -- "$flag" /proc/cpuinfo && echo "$flag"
}
pass=0 failed=() notrun=()
logs=$(mktemp -d /tmp/ibcr-run.XXXXXX)	# own logs: others may run the suite too
trap 'rm -rf "$logs"' EXIT
for t in "${tests[@]}"; do
	t=${t%.sh}.sh
	if lacks=$(cpu_lacks "$t"); then
		notrun+=("${t%.sh}")
		printf 'NOT RUN %-37s this CPU lacks %s\n' "${t%.sh}" "$lacks"
		continue
	fi
	start=$(now_ms)
	if timeout "${KILL[@]}" "$LIMIT" bash "$t" >"$logs/$t.log" 2>&1; then
		pass=$((pass + 1))
		printf 'PASS %-40s %6dms\n' "${t%.sh}" $(($(now_ms) - start))
	else
		failed+=("${t%.sh}")
		printf 'FAIL %-40s %6dms\n' "${t%.sh}" $(($(now_ms) - start))
		sed 's/^/    /' "$logs/$t.log"
	fi
	rm -f "$logs/$t.log"
done
echo "integration: $pass passed, ${#failed[@]} failed ${failed[*]:+(${failed[*]})}" \
	"${notrun[*]:+, ${#notrun[@]} not run on this CPU (${notrun[*]})}"
[ ${#failed[@]} -eq 0 ]
