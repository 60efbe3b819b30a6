# SPDX-License-Identifier: MIT
"""The cold and lazy restore part of `make bench` (bench/restore_cold.sh):
medians and ranges per size and way, the ratios against the same run's
O_DIRECT read (cold) and fill limit (warm), and the targets of issue 21
(a cold eager restore within 1.25x of the direct read; a lazy restore
of 4 GiB running again in under 50 ms). Run alone: cold_report.py RAW."""
import csv
import statistics
import sys

COLD_RATIO_TARGET = 1.25
LAZY_RUNNING_MS = 50.0
WAYS = ["direct-read", "fill-limit", "cold", "cold--lazy", "warm", "warm--lazy"]
TITLES = {"direct-read": "O_DIRECT read (dd, cold)", "fill-limit": "fill limit (warm)",
          "cold": "cold eager", "cold--lazy": "cold lazy", "warm": "warm eager",
          "warm--lazy": "warm lazy"}
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _bytes(size):
    return float(size[:-1]) * UNITS.get(size[-1], 1) if size and size[-1] in UNITS else 0


def summarize(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    groups = {}
    for r in rows:
        groups.setdefault((r["size"], r["way"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        s = {"n": len(rs)}
        for c in ("running_ms", "full_ms"):
            vals = [x for x in (_num(r.get(c)) for r in rs) if x is not None]
            s[c] = statistics.median(vals) if vals else None
            s[c + "_range"] = (min(vals), max(vals)) if vals else None
        out[key] = s
    return out


def _get(summ, size, way, col="running_ms"):
    return summ.get((size, way), {}).get(col)


def _ratio(a, b):
    return a / b if a is not None and b else None


def targets(summ):
    res = []
    for size in sorted({s for s, _ in summ}, key=_bytes):
        r = _ratio(_get(summ, size, "cold"), _get(summ, size, "direct-read"))
        if r is not None:
            res.append((r <= COLD_RATIO_TARGET, f"cold eager restore of {size}: {r:.2f}x "
                        f"the O_DIRECT read <= {COLD_RATIO_TARGET}x"))
        if _bytes(size) >= 4 << 30:
            for way in ("cold--lazy", "warm--lazy"):
                ms = _get(summ, size, way)
                if ms is not None:
                    res.append((ms < LAZY_RUNNING_MS, f"{TITLES[way]} restore of {size} "
                                f"running again: {ms:.1f} ms < {LAZY_RUNNING_MS:.0f} ms"))
    return res


def _f(v, nd=0):
    return "-" if v is None else f"{v:.{nd}f}"


def _rng(rg, nd=0):
    return "-" if rg is None else f"{rg[0]:.{nd}f}-{rg[1]:.{nd}f}"


def markdown(summ):
    out = ["| size | way | n | running again ms | (range) | all in ms | (range) | "
           "/ O_DIRECT read | / fill limit |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sorted({s for s, _ in summ}, key=_bytes):
        direct, limit = _get(summ, size, "direct-read"), _get(summ, size, "fill-limit")
        for way in WAYS:
            s = summ.get((size, way))
            if not s:
                continue
            nd = 1 if way.endswith("--lazy") else 0
            vs_direct = _ratio(s["full_ms"], direct) if way.startswith("cold") else None
            vs_limit = _ratio(s["full_ms"], limit) if way.startswith("warm") else None
            out.append(f"| {size} | {TITLES.get(way, way)} | {s['n']} | {_f(s['running_ms'], nd)} | "
                       f"{_rng(s['running_ms_range'], nd)} | {_f(s['full_ms'])} | "
                       f"{_rng(s['full_ms_range'])} | {_f(vs_direct, 2)} | {_f(vs_limit, 2)} |")
    return "\n".join(out)


def main(argv):
    summ = summarize(argv[1])
    print(markdown(summ))
    print()
    for ok, text in targets(summ):
        print(("  met   " if ok else "  MISSED ") + text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
