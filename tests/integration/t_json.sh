#!/usr/bin/env bash
# Machine-readable output (issue 19, docs/json.md): `ckpt-info --json` is
# one JSON object holding what the text output says (pid, threads,
# regions, files; the same numbers), "ok": false with the error for a
# damaged image (status 1); `saver --stats=json` and
# `restart-loader --stats=json` are one JSON object each, with the
# fields of the ibcr-stats line, same names and same values' kinds. The
# network lock an image holds (saver --kill of a TCP pair): its table,
# the connections and listeners it holds as the text and nftables say,
# and the command that removes it, which does; null for other images.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

command -v python3 >/dev/null || fail "python3 is needed (tools/deps.sh check installs it)"
start "$T/prog.out" "$PROGS/threads" 100000 50
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
"$SAVER" --stats=json -o "$T/img.ckpt" "$pid" 2>"$T/saver.err" ||
	fail "saver --stats=json failed: $(cat "$T/saver.err")"
"$INFO" --json --verify "$T/img.ckpt" >"$T/info.json" 2>"$T/info.err" ||
	fail "ckpt-info --json --verify failed: $(cat "$T/info.err")"
"$INFO" "$T/img.ckpt" >"$T/info.txt" || fail "ckpt-info failed"
[ "$(wc -l <"$T/info.json")" = 1 ] || fail "ckpt-info --json printed $(wc -l <"$T/info.json") lines"

python3 - "$T/info.json" "$T/info.txt" "$pid" <<'EOF' || fail "ckpt-info --json does not say what its text says"
import json, re, sys
j = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
pid = int(sys.argv[3])
def need(c, what):
    if not c:
        sys.exit("t_json: " + what)
need(j["schema"] == 1 and j["ok"] is True and j["verified"] is True, "schema/ok/verified: %r" % {k: j.get(k) for k in ("schema", "ok", "verified")})
m = re.search(r"format (\d+), (\S+), page size (\d+), (\d+) process\(es\), (\d+) sections", txt)
need(m, "no header in the text")
need([j["format"], j["arch"], j["page_size"], j["nprocs"], j["sections"]] ==
     [int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5])], "header differs")
p = j["processes"][0]
need(p["pid"] == pid and p["comm"] == "threads", "pid %r comm %r" % (p["pid"], p["comm"]))
need(len(p["threads"]) == 9 and "threads: 9" in txt, "threads %d" % len(p["threads"]))
tids = sorted(int(t) for t in re.findall(r"^    tid (\d+) .* pc 0x", txt, re.M))
need(sorted(t["tid"] for t in p["threads"]) == tids, "tids differ")
for t in p["threads"]:
    need(re.fullmatch(r"0x[0-9a-f]+", t["pc"]) and isinstance(t["syscall"], int), "thread %r" % t)
regs = re.findall(r"^    ([0-9a-f]{12})-([0-9a-f]{12}) (\S{4}) (\S+) +(\d+)", txt, re.M)
need(len(regs) == len(p["regions"]), "%d regions, text %d" % (len(p["regions"]), len(regs)))
for r, (s, e, prot, kind, n) in zip(p["regions"], regs):
    need(int(r["start"], 16) == int(s, 16) and int(r["end"], 16) == int(e, 16) and r["prot"] == prot
         and r["bytes"] == int(n) and kind.startswith(r["kind"]), "region %r vs %r" % (r, (s, e, prot, kind, n)))
need(p["page_bytes"] == sum(r["bytes"] for r in p["regions"]), "page_bytes")
fds = re.findall(r"^    fd (\d+) +(\S+) +pos (\d+)", txt, re.M)
need([(f["fd"], f["kind"], f["pos"]) for f in p["files"]] == [(int(a), b, int(c)) for a, b, c in fds], "files differ")
need("network_lock" in j and j["network_lock"] is None, "network_lock of an image without one: %r" % j.get("network_lock"))
EOF

# a damaged image: ok false, the error, status 1, still one object
cp "$T/img.ckpt" "$T/bad.ckpt"
"$PROGS/imgtool" flip-region "$T/bad.ckpt" >/dev/null || fail "imgtool flip-region failed"
st=0
"$INFO" --json --verify "$T/bad.ckpt" >"$T/bad.json" 2>/dev/null || st=$?
[ "$st" = 1 ] || fail "ckpt-info --json on a damaged image: status $st, not 1"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["ok"] is False and j["error"] else "no error: %r" % j)' "$T/bad.json" ||
	fail "damaged image: $(head -c 300 "$T/bad.json")"
"$INFO" --json /nonexistent.ckpt >"$T/none.json" 2>/dev/null && fail "ckpt-info --json on no file: status 0"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["ok"] is False and "No such file" in j["error"] else 1)' "$T/none.json" ||
	fail "no file: $(cat "$T/none.json")"

# --stats=json of both: one object each, the ibcr-stats fields
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
LOADER_ARGS=--stats=json LOADER_ERR=$T/loader.err restart "$T/img.ckpt"
wait_line "$T/loader.err" '^\{"program":"restart-loader"' 30
"$SAVER" --stats -o "$T/img2.ckpt" "$RPID" 2>"$T/saver2.err" || fail "saver --stats failed"
python3 - "$T/saver.err" "$T/saver2.err" "$T/loader.err" <<'EOF' || fail "--stats=json is not the ibcr-stats line as JSON"
import json, sys
def obj(path, prog):
    lines = [l for l in open(path) if l.startswith("{")]
    if len(lines) != 1:
        sys.exit("t_json: %s: %d JSON lines" % (path, len(lines)))
    j = json.loads(lines[0])
    if j.get("program") != prog or not j.get("release"):
        sys.exit("t_json: %s: %r" % (path, j))
    return j
s = obj(sys.argv[1], "saver")
text = [l for l in open(sys.argv[2]) if l.startswith("ibcr-stats:")][0].split()[1:]
names = [kv.split("=")[0] for kv in text]
keys = [k for k in s if k not in ("program", "release")]
if keys != names:
    sys.exit("t_json: saver JSON fields %r, text %r" % (keys, names))
for k in keys:
    if not isinstance(s[k], (int, float)) or s[k] < 0:
        sys.exit("t_json: saver %s = %r" % (k, s[k]))
if not s["image_bytes"] > 0 or not s["page_bytes"] > 0:
    sys.exit("t_json: saver sizes %r" % s)
l = obj(sys.argv[3], "restart-loader")
for k in ("restore_ms", "prepare_ms", "memory_ms", "finish_ms", "peak_rss_kb", "uffd_kb", "written_kb"):
    if not isinstance(l.get(k), (int, float)):
        sys.exit("t_json: loader %s = %r" % (k, l.get(k)))
EOF
# the network lock of an image of processes killed with their connections
"$TOP/tools/deps.sh" pkg nftables
start "$T/pair.out" "$PROGS/tcppair" 60
pair=$PID
wait_line "$T/pair.out" '^tick 3 '
checkpoint "$pair" "$T/net.ckpt" --tree --kill
wait "$pair" 2>/dev/null || true
table=$(lock_of "$T/net.ckpt")
[ -n "$table" ] || fail "no network lock in the image: $(cat "$T/info.out")"
"$INFO" --json "$T/net.ckpt" >"$T/net.json" 2>"$T/net.err" || fail "ckpt-info --json: $(cat "$T/net.err")"
"$INFO" "$T/net.ckpt" >"$T/net.txt" || fail "ckpt-info failed"
nft list table inet "$table" >"$T/nft.txt" || fail "no table $table in nftables"
python3 - "$T/net.json" "$T/net.txt" "$T/nft.txt" "$T/net.ckpt" <<'EOF' || fail "ckpt-info --json's network_lock does not say what the text and nftables say"
import json, re, sys
j = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
nft = open(sys.argv[3]).read()
def need(c, what):
    if not c:
        sys.exit("t_json: network_lock: " + what)
l = j.get("network_lock")
need(isinstance(l, dict), "%r" % l)
m = re.search(r"network lock: nftables table inet (\S+), (\d+) connection\(s\), (\d+) listener\(s\)", txt)
need(m, "none in the text")
need([l["table"], l["family"], l["connections"], l["listeners"]] == [m[1], "inet", int(m[2]), int(m[3])],
     "%r, text %r" % (l, m.groups()))
need(isinstance(l["created_ns"], int) and l["created_ns"] > 0, "created_ns %r" % l["created_ns"])
conns = l["locked_connections"]
need(len(conns) == l["connections"] == 2, "connections %r" % conns)
for c in conns:
    # the text's "repair LOCAL -> REMOTE", and nftables' rule for its packets
    need(re.search(r" repair %s -> %s" % (re.escape(c["local"]), re.escape(c["remote"])), txt), "%r not in the text" % c)
    (lh, lp), (rh, rp) = (a.rsplit(":", 1) for a in (c["local"], c["remote"]))
    want = ("ip saddr %s " % rh, "tcp sport %s " % rp, "ip daddr %s " % lh, "tcp dport %s " % lp, " drop")
    need(any(all(w in line + " " for w in want) for line in nft.splitlines()),
         "no rule for the packets to %r" % c)
lis = l["locked_listeners"]
need(len(lis) == l["listeners"] and all(re.search(r" listen %s" % re.escape(a), txt) for a in lis), "listeners %r" % lis)
need(l["unlock"] == ["restart-loader", "--unlock-net", sys.argv[4]], "unlock %r" % l["unlock"])
EOF
# its unlock command removes it
cmd=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["network_lock"]["unlock"][1:]))' "$T/net.json")
# shellcheck disable=SC2086
"$LOADER" $cmd >"$T/unlock.out" 2>&1 || fail "restart-loader $cmd: $(cat "$T/unlock.out")"
! locks | holds -x "$table" || fail "the lock is still there after its unlock command"
exit 0
