#!/usr/bin/env bash
# Node.js (V8 marks its whole heap MADV_DONTFORK): a live checkpoint
# still runs the process on from a snapshot while the image is written
# (the heap is copied in the freeze), and after saver --kill and a
# restart the program goes on with its heap as it was (it checks a hash
# of 16 MiB of strings every tick) and finishes.
. "$(dirname "$0")/lib.sh"

"$TOP/tools/deps.sh" pkg nodejs
NODE=$(command -v node) || fail "node is not installed"
cat >"$T/app.js" <<'JS'
const crypto = require('crypto');
const data = [];
for (let i = 0; i < 2000; i++) data.push(crypto.randomBytes(4096).toString('hex'));
const sum = () => crypto.createHash('sha256').update(data.join('')).digest('hex');
const want = sum();
let n = 0;
const t = setInterval(() => {
  if (sum() !== want) { console.log('FAIL heap changed'); process.exit(1); }
  console.log(`tick ${n++} pid ${process.pid}`);
  if (n === 80) { clearInterval(t); console.log(`DONE pid ${process.pid}`); }
}, 50);
JS
start "$T/prog.out" "$NODE" "$T/app.js"
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint "$pid" "$T/live.ckpt" --stats
grep -q 'snapshot_ms=0.0 ' "$T/saver.err" &&
	fail "no snapshot of node: the process stayed frozen for the write: $(cat "$T/saver.err")"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
wait "$LPID" || fail "restored node exited with status $?: $(tail -n 2 "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "node found its heap changed"
grep -q '^DONE' "$T/prog.out" || fail "node did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
