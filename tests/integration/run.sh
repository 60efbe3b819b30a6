#!/usr/bin/env bash
# Runs every integration test (or those named), each under a time limit,
# and prints one line per test and a summary. Exit status 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")"
LIMIT=${TEST_TIMEOUT:-300}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(t_*.sh)
pass=0 failed=()
for t in "${tests[@]}"; do
	t=${t%.sh}.sh
	start=$(date +%s%N)
	if timeout -k 10 "$LIMIT" bash "$t" >"/tmp/ibcr-$t.log" 2>&1; then
		pass=$((pass + 1))
		printf 'PASS %-40s %6dms\n' "${t%.sh}" $((($(date +%s%N) - start) / 1000000))
	else
		failed+=("${t%.sh}")
		printf 'FAIL %-40s %6dms\n' "${t%.sh}" $((($(date +%s%N) - start) / 1000000))
		sed 's/^/    /' "/tmp/ibcr-$t.log"
	fi
	rm -f "/tmp/ibcr-$t.log"
done
echo "integration: $pass passed, ${#failed[@]} failed ${failed[*]:+(${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
