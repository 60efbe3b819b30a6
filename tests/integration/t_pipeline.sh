#!/usr/bin/env bash
# An unmodified shell pipeline, `bash -c 'seq ... | sha256sum'`, saved with
# --tree while the data flows (bash, seq and sha256sum, the pipe between
# them holding bytes), killed and restarted: it ends with exactly the hash
# of an uninterrupted run, so every byte went through once, in order.
. "$(dirname "$0")/lib.sh"

N=40000000
want=$(seq 1 "$N" | sha256sum)
start "$T/prog.out" bash -c "seq 1 $N | sha256sum"
pid=$PID
sleep 1	# let the data flow; the hash tells whether it was cut anywhere
kids=$(children_of "$pid")
[ "$(echo $kids | wc -w)" = 2 ] || fail "the pipeline has not started its two commands: $kids"
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q "3 process(es)" "$T/info.out" || fail "the image does not hold bash, seq and sha256sum"
wait "$pid" 2>/dev/null || true
for k in $kids; do while [ -e "/proc/$k" ]; do sleep 0.05; done; done
[ -s "$T/prog.out" ] && fail "the pipeline had finished before the checkpoint; make N larger"
timeout 120 "$LOADER" "$T/img.ckpt" >"$T/loader.out" 2>&1 || fail "restart-loader exited with $?"
[ "$(cat "$T/prog.out")" = "$want" ] || fail "hash $(cat "$T/prog.out"), uninterrupted $want"
exit 0
