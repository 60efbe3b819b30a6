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
[ ${#tests[@]} -gt 0 ] || tests=(t_*.sh)
pass=0 failed=()
logs=$(mktemp -d /tmp/ibcr-run.XXXXXX)	# own logs: others may run the suite too
trap 'rm -rf "$logs"' EXIT
for t in "${tests[@]}"; do
	t=${t%.sh}.sh
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
echo "integration: $pass passed, ${#failed[@]} failed ${failed[*]:+(${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
