# SPDX-License-Identifier: MIT
"""The freeze part of `make bench` (bench/freeze.sh): medians per workload
and configuration, the ratio of the snapshot's freeze to the frozen
write's in the same run, and the targets of issue 21 (freeze at most
100 ms for the tree and for 24 busy threads; goal under 10 ms)."""
import csv
import statistics

FREEZE_TARGET_MS = 100.0
FREEZE_GOAL_MS = 10.0
COLS = ["freeze_ms", "stall_ms", "seize_ms", "capture_ms", "snapshot_ms", "ckpt_ms"]
TITLES = {"tree-sysv64M-3x256M-8t": "tree: 64 MiB SysV + 3 children x 256 MiB, 8 threads each",
          "busy-24t-64M": "24 busy threads, 64 MiB"}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def summarize(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    groups = {}
    for r in rows:
        groups.setdefault((r["workload"], r["config"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        s = {"n": len(rs)}
        for c in COLS:
            vals = [x for x in (_num(r.get(c)) for r in rs) if x is not None]
            s[c] = statistics.median(vals) if vals else None
            if c == "freeze_ms" and vals:
                s["freeze_min"], s["freeze_max"] = min(vals), max(vals)
        out[key] = s
    return out


def _f(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"


def targets(summ):
    res = []
    for (w, c), s in sorted(summ.items()):
        if c != "ibcr" or s["freeze_ms"] is None:
            continue
        res.append((s["freeze_ms"] <= FREEZE_TARGET_MS,
                    f"freeze of {w}: {_f(s['freeze_ms'])} ms <= {FREEZE_TARGET_MS:.0f} ms "
                    f"(goal {FREEZE_GOAL_MS:.0f} ms: {'met' if s['freeze_ms'] < FREEZE_GOAL_MS else 'not yet'})"))
    return res


def markdown(summ):
    out = ["| workload | config | n | freeze ms | (min-max) | app stall ms | seize ms | "
           "capture ms | snapshot ms | checkpoint ms | freeze / frozen write |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (w, c), s in sorted(summ.items()):
        frozen = summ.get((w, "ibcr-frozen"), {}).get("freeze_ms")
        ratio = (s["freeze_ms"] / frozen) if (c == "ibcr" and frozen and s["freeze_ms"] is not None) else None
        out.append(f"| {TITLES.get(w, w)} | {c} | {s['n']} | {_f(s['freeze_ms'])} | "
                   f"{_f(s.get('freeze_min'))}-{_f(s.get('freeze_max'))} | {_f(s['stall_ms'])} | "
                   f"{_f(s['seize_ms'])} | {_f(s['capture_ms'])} | {_f(s['snapshot_ms'])} | "
                   f"{_f(s['ckpt_ms'], 0)} | {_f(ratio, 3)} |")
    return "\n".join(out)
