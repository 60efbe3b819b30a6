#!/usr/bin/env bash
# tests/verbs/run-pair.sh - verbs across two guests (tools/vm/x86-vm-pair.sh):
# an rc_pp pair checkpointed as one cut over both nodes (one saver per
# guest, saver --barrier), then each image restarted on the other guest
# (tests/verbs/pair-guest.sh). Two pair boots. Prints PASS/FAIL lines and
# "pair: N passed, M failed"; exits non-zero on a failure.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
tools/vm/deps-x86.sh || exit 1
make -s all >/dev/null || { echo "run-pair.sh: make failed" >&2; exit 1; }

rw=$(mktemp -d "$ROOT/build/pair-rw.XXXXXX")
mkdir -p build/verbs-logs
log=build/verbs-logs/pair
G=tests/verbs/pair-guest.sh
t0=$SECONDS
for phase in ckpt swap; do
	tools/vm/x86-vm-pair.sh --timeout 1500 --rw "$rw" -- "bash $ROOT/$G $phase $rw" \
		"bash $ROOT/$G $phase $rw" 2>&1 | tee "$log.$phase"
done
passed=$(grep -c 'PASS pair_' "$log".* | awk -F: '{s += $2} END {print s}')
failed=$(grep -c 'FAIL pair_' "$log".* | awk -F: '{s += $2} END {print s}')
((passed == 4)) || failed=$((failed > 0 ? failed : 1))
if ((failed)); then
	rm -rf build/verbs-logs/pair-rw && mv "$rw" build/verbs-logs/pair-rw
else
	rm -rf "$rw"
fi
echo "pair: $passed passed, $failed failed ($((SECONDS - t0)) s)"
((failed == 0))
