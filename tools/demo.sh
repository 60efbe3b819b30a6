#!/usr/bin/env bash
# The main job end to end: start a sample program, checkpoint it, kill it,
# restart it from the image, and show it continuing where it was.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${IBCR_BUILD:-build}
dir=$(mktemp -d /tmp/ibcr-demo.XXXXXX)
img=$dir/demo.ckpt
trap 'kill -9 ${pid:-} ${lpid:-} 2>/dev/null || true; rm -rf "$dir"' EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "starting the sample program (it checks its own memory every tick)"
# stdin from /dev/null and no other inherited descriptors: like a batch job
( for fd in /proc/$BASHPID/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
  exec "$B/tests/progs/counter" 60 100 </dev/null ) &
pid=$!
sleep 1.5

say "checkpoint: $B/saver --kill -o $img $pid"
"$B/saver" --kill -o "$img" "$pid"
wait "$pid" 2>/dev/null || true
echo "pid $pid is gone: $(ps -p "$pid" >/dev/null && echo still there || echo yes)"

say "what the image holds: $B/ckpt-info --verify $img"
"$B/ckpt-info" --verify "$img" | sed -n '1,6p;/page data/p;/verify/p'

say "restart: $B/restart-loader $img (the program continues, same pid)"
timeout 60 "$B/restart-loader" "$img" &
lpid=$!
sleep 2
say "ps shows the program itself:"
ps -o pid,ppid,stat,cmd -p "$pid" || true
wait "$lpid"
say "the restored program finished normally (exit status $?)"
