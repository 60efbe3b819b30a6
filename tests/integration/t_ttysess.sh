#!/usr/bin/env bash
# A session on a pty inside the image (tests/progs/ttysess: a terminal
# emulator's child session with a foreground group): after --tree --kill
# and restart, and after a live checkpoint, the session leader has its
# controlling terminal again (a new pair's slave: /dev/tty opens it), the
# group is its foreground, and the slave has its owner and mode (it came
# back root's before). Input typed into a pty that a non-canonical
# reader has not read comes back as it was. A session leader whose
# controlling terminal is outside the image is refused, in one line, and
# runs on, and so is a canonical reader's unread input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

gate_mode ttysess "" --tree
gate_mode ttysess "" live --tree

# input typed into a pty that its non-canonical reader has not read: the
# same bytes, once, unprocessed (refused before); a canonical reader's
# is refused, and the reader runs on
gate_mode ptyinput "" --tree
gate_mode ptyinput "" live --tree
mkdir "$T/canon" && cd "$T/canon"
start "$T/canon/out" "$PROGS/ptyinput" canon
wait_line "$T/canon/out" '^ready '
saver_refuses "$T/canon/img" "pid $PID fd [0-9]+: pty master: /dev/pts/[0-9]+ has [0-9]+ bytes of unread input for a canonical" --kill --tree "$PID"
touch go
wait "$PID" || fail "the refused canonical reader did not run on: $(tail -n 2 "$T/canon/out")"

# below the image's root, a session leader whose controlling terminal is
# a pty whose master a process outside the image holds
mkdir "$T/out" && cd "$T/out"
start "$T/out/master.out" python3 -c '
import os, time
m, s = os.openpty()
print(os.ttyname(s), flush=True)
os.close(s)
while not os.path.exists("go"):
    time.sleep(0.01)'
wait_line "$T/out/master.out" '^/dev/pts/'
cat >sess.py <<'EOP'
import os, sys, time
c = os.fork()
if c == 0:
    os.setsid()
    os.close(os.open(sys.argv[1], os.O_RDWR))	# its controlling terminal now
    open("pid", "w").write("%d %d\n" % (os.getppid(), os.getpid()))
    while not os.path.exists("go"):
        time.sleep(0.01)
    os._exit(0)
os.waitpid(c, 0)
print("DONE", flush=True)
EOP
start "$T/out/sess.out" python3 sess.py "$(cat "$T/out/master.out")"
while [ ! -s pid ]; do sleep 0.05; done
read -r root pid <pid
saver_refuses "$T/out/img" "pid $pid: session leader whose controlling terminal \\(136:[0-9]+\\) is outside the checkpoint" --kill --tree "$root"
touch go
wait "$root" || fail "the refused session did not run on"
grep -q DONE "$T/out/sess.out" || fail "the refused session did not finish"
exit 0
