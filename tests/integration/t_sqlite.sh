#!/usr/bin/env bash
# An unmodified sqlite3 writing a database, 400 transactions, stopped
# (SIGSTOP) while it holds its POSIX locks on the database (inside a
# transaction), saved, killed and restarted: it comes back stopped, holding
# its locks again, and after SIGCONT it finishes, the database passes
# PRAGMA integrity_check and holds every row.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (tools/deps.sh check installs it)"

cd "$T"
python3 - <<'EOS'
with open("script.sql", "w") as f:
    f.write("PRAGMA journal_mode=DELETE;\nCREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT);\n")
    for b in range(400):
        f.write("BEGIN;\nWITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x+1 FROM c "
                "WHERE x < %d) INSERT INTO t SELECT x, hex(randomblob(200)) FROM c;\n"
                "COMMIT;\n" % (b * 1000 + 1, b * 1000 + 1000))
    f.write("SELECT 'rows', count(*) FROM t;\n")
EOS
"$PROGS/clean-exec" sqlite3 "$T/db" <script.sql >"$T/prog.out" 2>&1 &
pid=$!
STARTED+=("$pid")
# catch it inside a transaction: holding a POSIX lock on the database
for ((i = 0; i < 2000; i++)); do
	grep -q "^lock:.*POSIX" /proc/$pid/fdinfo/* 2>/dev/null && break
	sleep 0.005
done
kill -STOP "$pid"
grep -q "^lock:.*POSIX" /proc/$pid/fdinfo/* || fail "sqlite3 never held a lock we could see"
checkpoint "$pid" "$T/img.ckpt" --kill
wait "$pid" 2>/dev/null || true
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
for ((i = 0; i < 200; i++)); do
	grep -q '^State:.*T' "/proc/$RPID/status" && break
	sleep 0.05
done
grep -q '^State:.*T' "/proc/$RPID/status" || fail "sqlite3 was stopped and came back running"
grep -q "^lock:.*POSIX" /proc/$RPID/fdinfo/* || fail "the restored sqlite3 does not hold its locks"
kill -CONT "$RPID"
wait "$LPID" || fail "restored sqlite3 exited with status $?"
grep -q '^rows|400000$' "$T/prog.out" || fail "sqlite3 said: $(cat "$T/prog.out")"
[ "$(sqlite3 "$T/db" 'PRAGMA integrity_check;')" = ok ] || fail "integrity_check failed"
[ "$(sqlite3 "$T/db" 'SELECT count(*) FROM t;')" = 400000 ] || fail "rows missing"
exit 0
