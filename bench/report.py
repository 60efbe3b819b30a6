#!/usr/bin/python3
"""bench/report.py: turns the rows of bench/run.sh into the table, the CSV,
the plot and the results section of docs/benchmarks.md.

  report.py --raw RAW.csv --meta META --out DIR [--docs docs/benchmarks.md]
            [--criu-host F] [--criu-guest F] [--verbs RAW-VERBS.csv]
            [--verbs-meta F] [--strict]

Writes DIR/latest.csv (one line per where/workload/config: medians and
ratios), DIR/latest-raw.csv (every repetition), DIR/latest.md (the section
put into docs/benchmarks.md) and DIR/latest.png. Prints the table. With
--verbs (the rows of bench/verbs-guest.sh): also the verbs table, and
DIR/latest-verbs.csv (medians) and DIR/latest-verbs-raw.csv.
Exit status 0; with --strict, 1 when a target (of issue 5, or the verbs
shim's) is missed.
Only the standard library and matplotlib (Debian's python3-matplotlib).
"""
import argparse
import csv
import math
import os
import shutil
import statistics
import sys

LIMIT = 1.25            # checkpoint and whole restore: x the baseline
CRIU_TARGET = 0.5       # restore until running: x CRIU's
FREEZE_TARGET_MS = 100  # for the 4 GiB process
RSS_TARGET_KB = 64 * 1024
VERBS_LAT_TARGET = 1.02  # ib_send_lat under the shim: at most x this plain
VERBS_BW_TARGET = 1.00   # ib_write_bw under the shim: at least x this plain
MiB = 1 << 20

BEGIN = "<!-- bench:begin (written by bench/report.py; do not edit by hand) -->"
END = "<!-- bench:end -->"

NUM = ["freeze_ms", "stall_ms", "ckpt_ms", "capture_ms", "write_ms", "running_ms",
       "restore_stat_ms", "whole_ms", "image_bytes", "page_bytes", "direct_bytes",
       "touched_bytes", "mapped_bytes", "threads", "saver_rss_kb", "loader_rss_kb", "verify_warm_ms",
       "verify_after_ms", "restored_rss_kb", "base_write_ms", "base_popfill_ms",
       "base_pread_ms"]


def med(rows, key):
    vals = []
    for r in rows:
        v = r.get(key, "")
        if v not in ("", None):
            try:
                vals.append(float(v))
            except ValueError:
                pass
    return statistics.median(vals) if vals else None


def fmt(v, nd=0, dash="-"):
    if v is None:
        return dash
    if nd == 0:
        return f"{v:.0f}"
    return f"{v:.{nd}f}"


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.3f}"
    return v


def load(raw):
    with open(raw, newline="") as f:
        return [r for r in csv.DictReader(f)]


def summarize(rows):
    groups = {}
    order = []
    for r in rows:
        k = (r["where"], r["workload"], r["config"])
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(r)
    out = []
    for k in order:
        g = groups[k]
        s = {"where": k[0], "workload": k[1], "config": k[2], "reps": len(g),
             "verified": "yes" if all(r["verified"] == "yes" for r in g) else "NO"}
        for key in NUM:
            s[key] = med(g, key)
        out.append(s)
    # Baselines per (where, workload): the medians of the uncompressed rows
    # (they ran in the same repetitions).
    base = {}
    for s in out:
        if s["config"] == "ibcr" and s["base_write_ms"] is not None:
            base[(s["where"], s["workload"])] = s
    criu = {(s["where"], s["workload"]): s for s in out if s["config"] == "criu"}
    raw_img = {(s["where"], s["workload"]): s["image_bytes"] for s in out if s["config"] == "ibcr"}
    for s in out:
        b = base.get((s["where"], s["workload"]))
        s["ckpt_limit_ms"] = LIMIT * b["base_write_ms"] if b else None
        s["restore_limit_ms"] = LIMIT * b["base_popfill_ms"] if b else None
        s["base_write_ms"] = b["base_write_ms"] if b else None
        s["base_popfill_ms"] = b["base_popfill_ms"] if b else None
        s["base_pread_ms"] = b["base_pread_ms"] if b else None
        s["ckpt_ratio"] = (s["ckpt_ms"] / s["ckpt_limit_ms"]
                           if s["ckpt_limit_ms"] and s["ckpt_ms"] is not None else None)
        s["restore_ratio"] = (s["whole_ms"] / s["restore_limit_ms"]
                              if s["restore_limit_ms"] and s["whole_ms"] is not None else None)
        c = criu.get((s["where"], s["workload"]))
        s["vs_criu"] = (s["running_ms"] / c["running_ms"]
                        if c and c["running_ms"] and s["running_ms"] is not None
                        and s["config"] != "criu" else None)
        s["ckpt_vs_criu"] = (s["ckpt_ms"] / c["ckpt_ms"]
                             if c and c["ckpt_ms"] and s["ckpt_ms"] is not None
                             and s["config"] != "criu" else None)
        ri = raw_img.get((s["where"], s["workload"]))
        s["compression_ratio"] = (ri / s["image_bytes"]
                                  if ri and s["image_bytes"] and s["config"].startswith("ibcr")
                                  else None)
        t = s["touched_bytes"]
        s["ckpt_mb_s"] = t / MiB / (s["ckpt_ms"] / 1e3) if t and s["ckpt_ms"] else None
        s["restore_mb_s"] = t / MiB / (s["whole_ms"] / 1e3) if t and s["whole_ms"] else None
    return out


def size_label(b):
    if b is None:
        return "-"
    if b >= 1 << 30:
        return f"{b / (1 << 30):.3g} GiB"
    return f"{b / MiB:.3g} MiB"


TABLE_COLS = [
    ("where", "where", None), ("workload", "workload", None), ("config", "config", None),
    ("n", "reps", None), ("freeze ms", "freeze_ms", 1), ("app stall ms", "stall_ms", 1),
    ("ckpt ms", "ckpt_ms", 0), ("ckpt/limit", "ckpt_ratio", 2),
    ("running ms", "running_ms", 0), ("whole ms", "whole_ms", 0),
    ("restore/limit", "restore_ratio", 2), ("vs CRIU", "vs_criu", 2),
    ("image MiB", "image_mib", 1), ("compr.", "compression_ratio", 2),
    ("saver RSS MiB", "saver_mib", 1), ("loader RSS MiB", "loader_mib", 1),
    ("verified", "verified", None),
]


def table_rows(summary):
    rows = []
    for s in summary:
        s = dict(s)
        s["image_mib"] = s["image_bytes"] / MiB if s["image_bytes"] else None
        s["saver_mib"] = s["saver_rss_kb"] / 1024 if s["saver_rss_kb"] else None
        s["loader_mib"] = s["loader_rss_kb"] / 1024 if s["loader_rss_kb"] else None
        if s["config"] != "ibcr":
            s["ckpt_ratio"] = None     # the limit is for uncompressed checkpoints
        row = []
        for _, key, nd in TABLE_COLS:
            v = s[key]
            row.append(str(v) if nd is None else fmt(v, nd))
        rows.append(row)
    return rows


def text_table(summary):
    head = [c[0] for c in TABLE_COLS]
    rows = table_rows(summary)
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) if rows else len(head[i])
         for i in range(len(head))]
    line = lambda r: "  ".join(c.rjust(w[i]) if i >= 3 else c.ljust(w[i]) for i, c in enumerate(r))
    return "\n".join([line(head), line(["-" * x for x in w])] + [line(r) for r in rows])


def md_table(summary):
    head = [c[0] for c in TABLE_COLS]
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|"]
    for r in table_rows(summary):
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def targets(summary):
    """(ok, text) for each target of issue 5 that this run can judge."""
    res = []
    host = [s for s in summary if s["where"] == "host"]
    for s in host:
        if s["config"] != "ibcr":
            continue
        w = s["workload"]
        if s["ckpt_ratio"] is not None:
            res.append((s["ckpt_ratio"] <= 1.0,
                        f"checkpoint {w}: {fmt(s['ckpt_ms'])} ms <= 1.25 x write "
                        f"{fmt(s['base_write_ms'])} ms = {fmt(s['ckpt_limit_ms'])} ms "
                        f"(ratio {fmt(s['ckpt_ratio'], 2)})"))
        if s["restore_ratio"] is not None:
            res.append((s["restore_ratio"] <= 1.0,
                        f"whole restore {w}: {fmt(s['whole_ms'])} ms <= 1.25 x fill "
                        f"{fmt(s['base_popfill_ms'])} ms = {fmt(s['restore_limit_ms'])} ms "
                        f"(ratio {fmt(s['restore_ratio'], 2)})"))
        if s["touched_bytes"] and s["touched_bytes"] >= 4 << 30 and s["freeze_ms"] is not None:
            res.append((s["freeze_ms"] < FREEZE_TARGET_MS,
                        f"freeze {w}: {fmt(s['freeze_ms'], 1)} ms < {FREEZE_TARGET_MS} ms"))
    for key, what in (("saver_rss_kb", "saver"), ("loader_rss_kb", "restart-loader")):
        runs = [s for s in summary if s["config"].startswith("ibcr") and s[key]]
        if runs:
            top = max(runs, key=lambda s: s[key])
            res.append((top[key] < RSS_TARGET_KB,
                        f"{what} peak RSS, largest of all ibcr runs: {fmt(top[key] / 1024, 1)} MiB "
                        f"({top['where']} {top['workload']} {top['config']}) < 64 MiB"))
    for s in summary:
        if s["config"] == "ibcr" and s["vs_criu"] is not None:
            res.append((s["vs_criu"] <= CRIU_TARGET,
                        f"restore until running {s['where']} {s['workload']}: ibcr "
                        f"{fmt(s['running_ms'])} ms <= 0.5 x CRIU "
                        f"{fmt(s['running_ms'] / s['vs_criu'])} ms (ratio {fmt(s['vs_criu'], 2)})"))
    # Sparse: per touched byte like the dense workload of one thread closest in size.
    dense = {s["workload"]: s for s in host if s["config"] == "ibcr"
             and s["workload"].startswith("inc-") and s["workload"].endswith("-1t")}
    for s in host:
        if s["config"] != "ibcr" or not s["workload"].startswith("sparse") or not dense:
            continue
        d = min(dense.values(), key=lambda x: abs((x["touched_bytes"] or 0) - (s["touched_bytes"] or 0)))
        t, dt = s["touched_bytes"], d["touched_bytes"]
        if not (t and dt and d["ckpt_ms"] and d["whole_ms"] and s["image_bytes"]):
            continue
        img = s["image_bytes"] / t
        ck = (s["ckpt_ms"] / t) / (d["ckpt_ms"] / dt)
        rs = (s["whole_ms"] / t) / (d["whole_ms"] / dt)
        res.append((img < 1.1,
                    f"sparse image {s['workload']}: {size_label(s['image_bytes'])} for "
                    f"{size_label(t)} touched of {size_label(s['mapped_bytes'])} mapped "
                    f"(x{img:.2f} the touched bytes)"))
        res.append((ck < 2.0,
                    f"sparse checkpoint time per touched byte {s['workload']}: x{ck:.2f} "
                    f"that of {d['workload']} (target: comparable, < 2)"))
        res.append((rs < 2.0,
                    f"sparse restore time per touched byte {s['workload']}: x{rs:.2f} "
                    f"that of {d['workload']} (target: comparable, < 2)"))
    return res


def compression_table(summary):
    rows = [s for s in summary if s["where"] == "host" and s["config"].startswith("ibcr")]
    out = ["| workload | config | image MiB | ratio | checkpoint MiB/s | restore MiB/s |",
           "|---|---|---:|---:|---:|---:|"]
    for s in rows:
        out.append(f"| {s['workload']} | {s['config']} | "
                   f"{fmt(s['image_bytes'] / MiB if s['image_bytes'] else None, 1)} | "
                   f"{fmt(s['compression_ratio'], 2)} | {fmt(s['ckpt_mb_s'])} | "
                   f"{fmt(s['restore_mb_s'])} |")
    return "\n".join(out)


def baseline_table(summary):
    out = ["| where | workload | bytes | write+fsync ms | populate+pread ms | pread ms |",
           "|---|---|---:|---:|---:|---:|"]
    seen = set()
    for s in summary:
        k = (s["where"], s["workload"])
        if k in seen or s["base_write_ms"] is None:
            continue
        seen.add(k)
        out.append(f"| {s['where']} | {s['workload']} | {size_label(s['page_bytes'])} | "
                   f"{fmt(s['base_write_ms'])} | {fmt(s['base_popfill_ms'])} | "
                   f"{fmt(s['base_pread_ms'])} |")
    return "\n".join(out)


# ---- verbs (bench/verbs-guest.sh): rows "part,config,rep,metric,value" ----
def verbs_summary(rows):
    """{(part, config, metric): {"n", "med", "min", "max", "vals"}}, and the
    per-round shim/plain ratios {(part, metric): [ratio, ...]}."""
    vals, by_rep = {}, {}
    for r in rows:
        if r["rep"] == "all":
            continue
        try:
            v = float(r["value"])
        except ValueError:
            continue
        if not math.isfinite(v):
            continue
        vals.setdefault((r["part"], r["config"], r["metric"]), []).append(v)
        by_rep.setdefault((r["part"], r["metric"], r["rep"]), {})[r["config"]] = v
    out = {k: {"n": len(v), "med": statistics.median(v), "min": min(v), "max": max(v), "vals": v}
           for k, v in vals.items()}
    ratios = {}
    for (part, metric, _), d in by_rep.items():
        if d.get("plain") and "shim" in d:
            ratios.setdefault((part, metric), []).append(d["shim"] / d["plain"])
    return out, ratios


def verbs_verified(rows, part="rc_pp"):
    return [r["value"] for r in rows if r["part"] == part and r["metric"] == "verified"]


PERF_ROWS = [("ib_send_lat", "send_lat", "t_typical_us", "t_typical", "µs", 2, "lat"),
             ("ib_write_bw", "write_bw", "bw_avg_mb_s", "BW average", "MB/s", 2, "bw"),
             ("mpipp (MPI, UCX verbs)", "mpi_lat", "lat_us", "8 B latency", "µs", 2, "lat"),
             ("mpipp (MPI, UCX verbs)", "mpi_bw", "bw_mb_s", "1 MiB bandwidth", "MB/s", 1, "bw")]


def verbs_perf_rows(vs, ratios):
    """(tool, what, unit, n, plain, shim, ratio, round ratios text, ok, target text)"""
    out = []
    for tool, part, metric, what, unit, nd, kind in PERF_ROWS:
        p, sh = vs.get((part, "plain", metric)), vs.get((part, "shim", metric))
        if not p or not sh:
            continue
        ratio = sh["med"] / p["med"] if p["med"] else None
        rr = ratios.get((part, metric), [])
        rtext = f"{min(rr):.3f}-{max(rr):.3f}" if rr else "-"
        if kind == "lat":
            ok = ratio is not None and ratio <= VERBS_LAT_TARGET
            target = f"<= {VERBS_LAT_TARGET:.2f}"
        else:
            ok = ratio is not None and ratio >= VERBS_BW_TARGET
            target = f">= {VERBS_BW_TARGET:.2f}"
        out.append((tool, what, unit, min(p["n"], sh["n"]), fmt(p["med"], nd),
                    fmt(sh["med"], nd), ratio, rtext, ok, target))
    return out


def verbs_targets(vs, ratios):
    res = []
    for tool, what, unit, n, p, sh, ratio, rtext, ok, target in verbs_perf_rows(vs, ratios):
        if unit == "µs":
            res.append((ok, f"{tool} under the shim: {what} {sh} {unit} vs {p} {unit} plain, x{fmt(ratio, 3)} "
                            f"(target: at most x{VERBS_LAT_TARGET:.2f}; median of {n} rounds; "
                            f"per round x{rtext})"))
        else:
            res.append((ok, f"{tool} under the shim: {what} {sh} {unit} vs {p} {unit} plain, "
                            f"x{fmt(ratio, 3)} (target: at least x{VERBS_BW_TARGET:.2f}, no bandwidth loss; "
                            f"median of {n} rounds; per round x{rtext})"))
    return res


RC_STEPS = [("live", "checkpoint, the pair runs on"), ("kill", "checkpoint --kill"),
            ("restart", "restart-loader of the --kill image")]


def verbs_md(vs, ratios, verified, verified_mpi=None):
    perf = verbs_perf_rows(vs, ratios)
    out = []
    if perf:
        out += ["| test | measure | n | plain | shim | shim/plain | per round | target |",
                "|---|---|---:|---:|---:|---:|---:|---|"]
        for tool, what, unit, n, p, sh, ratio, rtext, ok, target in perf:
            out.append(f"| {tool} | {what} {unit} | {n} | {p} | {sh} | {fmt(ratio, 3)} | {rtext} | "
                       f"{target}: {'met' if ok else '**missed**'} |")
        out.append("")
    rc = [(k, t) for k, t in RC_STEPS if any(key[0] == "rc_pp" and key[1] == k for key in vs)]
    if rc:
        g = lambda k, m, nd=0: fmt(vs[("rc_pp", k, m)]["med"], nd) if ("rc_pp", k, m) in vs else "-"
        n = lambda k: max(v["n"] for key, v in vs.items() if key[0] == "rc_pp" and key[1] == k)
        out += ["| rc_pp job (2 processes, under ibcr-launch) | n | freeze ms | app stall ms | "
                "ckpt ms | saver wall ms | image KiB | saver RSS MiB | restore ms | "
                "both running ms | loader RSS MiB | verified |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for k, title in rc:
            img = vs.get(("rc_pp", k, "image_bytes"))
            srss = vs.get(("rc_pp", k, "saver_rss_kb"))
            lrss = vs.get(("rc_pp", k, "loader_rss_kb"))
            ver = "-"
            if k == "restart":
                ver = (f"yes, {verified[0]} iterations" if verified else "NO")
            out.append(f"| {title} | {n(k)} | {g(k, 'freeze_ms', 1)} | {g(k, 'stall_ms', 1)} | "
                       f"{g(k, 'ckpt_ms')} | {g(k, 'ckpt_wall_ms')} | "
                       f"{fmt(img['med'] / 1024 if img else None)} | "
                       f"{fmt(srss['med'] / 1024 if srss else None, 1)} | {g(k, 'restore_ms')} | "
                       f"{g(k, 'running_ms')} | {fmt(lrss['med'] / 1024 if lrss else None, 1)} | "
                       f"{ver} |")
        if ("rc_pp", "live", "iter_ms") in vs:
            out += ["", f"The pair's pace without a checkpoint: an iteration every "
                        f"{g('live', 'iter_ms', 1)} ms (the app stall includes one)."]
    if any(key[0] == "mpi_job" for key in vs):
        g = lambda k, m, nd=0: fmt(vs[("mpi_job", k, m)]["med"], nd) if ("mpi_job", k, m) in vs else "-"
        img = vs.get(("mpi_job", "kill", "image_bytes"))
        n = max(v["n"] for key, v in vs.items() if key[0] == "mpi_job")
        ok = verified_mpi or []
        out += ["", "| MPI job (4 ranks, ibcr-launch mpirun, UCX verbs) | n | freeze ms | ckpt ms | "
                "saver wall ms | image MiB | restore ms | verified |",
                "|---|---:|---:|---:|---:|---:|---:|---|",
                f"| saver --tree --kill, restart-loader | {n} | {g('kill', 'freeze_ms', 1)} | "
                f"{g('kill', 'ckpt_ms')} | {g('kill', 'ckpt_wall_ms')} | "
                f"{fmt(img['med'] / 1048576 if img else None, 1)} | {g('restart', 'restore_ms')} | "
                f"{('yes, ' + ok[0] + ' steps, the right answer') if ok else 'NO'} |"]
    return "\n".join(out)


def write_verbs_csv(vs, ratios, path):
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["part", "config", "metric", "n", "median", "min", "max"])
        for (part, config, metric), v in vs.items():
            wr.writerow([part, config, metric, v["n"], csv_value(v["med"]),
                         csv_value(v["min"]), csv_value(v["max"])])
        for (part, metric), rr in ratios.items():
            wr.writerow([part, "shim/plain per round", metric, len(rr),
                         csv_value(statistics.median(rr)), csv_value(min(rr)), csv_value(max(rr))])



def plot(summary, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing: no plot", file=sys.stderr)
        return False
    host = [s for s in summary if s["where"] == "host"]
    guest = [s for s in summary if s["where"] == "guest"]
    wls = []
    for s in host:
        if s["workload"] not in wls:
            wls.append(s["workload"])
    configs = ["ibcr", "ibcr-zstd", "ibcr-zlib"]
    colors = {"ibcr": "#1f77b4", "ibcr-zstd": "#2ca02c", "ibcr-zlib": "#9467bd", "criu": "#d62728"}
    get = {(s["workload"], s["config"]): s for s in host}
    fig, ax = plt.subplots(2, 2, figsize=(15, 10))

    def bars(a, key, limit_key, title, ylabel, target=None):
        width = 0.8 / len(configs)
        for i, c in enumerate(configs):
            xs, ys = [], []
            for j, w in enumerate(wls):
                s = get.get((w, c))
                if s and s[key]:
                    xs.append(j + (i - (len(configs) - 1) / 2) * width)
                    ys.append(s[key])
            if xs:
                a.bar(xs, ys, width, label=c, color=colors[c])
        if limit_key:
            for j, w in enumerate(wls):
                s = get.get((w, "ibcr"))
                if s and s[limit_key]:
                    a.hlines(s[limit_key], j - 0.45, j + 0.45, colors="black", linewidth=2,
                             label="limit (1.25 x baseline)" if j == 0 else None)
        if target:
            a.axhline(target, color="red", linestyle="--", label=f"target {target} ms")
        a.set_yscale("log")
        a.set_xticks(range(len(wls)))
        a.set_xticklabels(wls, rotation=30, ha="right", fontsize=8)
        a.set_title(title)
        a.set_ylabel(ylabel)
        a.legend(fontsize=7)

    bars(ax[0][0], "ckpt_ms", "ckpt_limit_ms", "Checkpoint total (host)", "ms (log)")
    bars(ax[0][1], "whole_ms", "restore_limit_ms", "Whole restore (host)", "ms (log)")
    bars(ax[1][0], "freeze_ms", None, "Freeze: application stopped (host)", "ms (log)",
         target=FREEZE_TARGET_MS)
    a = ax[1][1]
    gw = []
    for s in guest:
        if s["workload"] not in gw:
            gw.append(s["workload"])
    gget = {(s["workload"], s["config"]): s for s in guest}
    for i, c in enumerate(["ibcr", "criu"]):
        xs, ys = [], []
        for j, w in enumerate(gw):
            s = gget.get((w, c))
            if s and s["running_ms"]:
                xs.append(j + (i - 0.5) * 0.4)
                ys.append(s["running_ms"])
        if xs:
            a.bar(xs, ys, 0.4, label=c, color=colors[c])
    for j, w in enumerate(gw):
        s = gget.get((w, "criu"))
        if s and s["running_ms"]:
            a.hlines(CRIU_TARGET * s["running_ms"], j - 0.45, j + 0.45, colors="black",
                     linewidth=2, label="target 0.5 x CRIU" if j == 0 else None)
    a.set_xticks(range(len(gw)))
    a.set_xticklabels(gw, fontsize=8)
    a.set_title("Restore until the program runs (6.1 guest, TCG)")
    a.set_ylabel("ms")
    if gw:
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--criu-host")
    ap.add_argument("--criu-guest")
    ap.add_argument("--out", required=True)
    ap.add_argument("--docs")
    ap.add_argument("--verbs")
    ap.add_argument("--verbs-meta")
    ap.add_argument("--freeze")
    ap.add_argument("--cold")
    ap.add_argument("--strict", action="store_true")
    a = ap.parse_args()

    rows = load(a.raw)
    summary = summarize(rows)
    os.makedirs(a.out, exist_ok=True)
    shutil.copyfile(a.raw, os.path.join(a.out, "latest-raw.csv"))

    cols = ["where", "workload", "config", "reps", "touched_bytes", "mapped_bytes", "threads",
            "freeze_ms", "stall_ms", "ckpt_ms", "capture_ms", "write_ms", "ckpt_limit_ms",
            "ckpt_ratio", "running_ms", "restore_stat_ms", "whole_ms", "restore_limit_ms",
            "restore_ratio", "vs_criu", "ckpt_vs_criu", "image_bytes", "page_bytes",
            "compression_ratio", "ckpt_mb_s", "restore_mb_s", "saver_rss_kb", "loader_rss_kb",
            "restored_rss_kb", "base_write_ms", "base_popfill_ms", "base_pread_ms", "verified"]
    with open(os.path.join(a.out, "latest.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(cols)
        for s in summary:
            wr.writerow([csv_value(s[c]) for c in cols])

    meta = open(a.meta).read().strip() if a.meta and os.path.exists(a.meta) else ""
    criu_host = open(a.criu_host).read().strip() if a.criu_host and os.path.exists(a.criu_host) else "not run"
    criu_guest = open(a.criu_guest).read().strip() if a.criu_guest and os.path.exists(a.criu_guest) else "not run"
    tg = targets(summary)
    png = os.path.join(a.out, "latest.png")
    have_png = plot(summary, png) if summary else False

    vs, ratios, verified, vtg, vmd = {}, {}, [], [], ""
    if a.verbs and os.path.exists(a.verbs):
        vrows = load(a.verbs)
        shutil.copyfile(a.verbs, os.path.join(a.out, "latest-verbs-raw.csv"))
        vs, ratios = verbs_summary(vrows)
        verified = verbs_verified(vrows)
        write_verbs_csv(vs, ratios, os.path.join(a.out, "latest-verbs.csv"))
        vtg = verbs_targets(vs, ratios)
        vmd = verbs_md(vs, ratios, verified, verbs_verified(vrows, "mpi_job"))
    verbs_meta = (open(a.verbs_meta).read().strip()
                  if a.verbs_meta and os.path.exists(a.verbs_meta) else "")
    fz, ftg, fmd = {}, [], ""
    if a.freeze and os.path.exists(a.freeze):
        import freeze_report
        shutil.copyfile(a.freeze, os.path.join(a.out, "latest-freeze-raw.csv"))
        fz = freeze_report.summarize(a.freeze)
        ftg = freeze_report.targets(fz)
        fmd = freeze_report.markdown(fz)
    ctg, cmd = [], ""
    if a.cold and os.path.exists(a.cold):
        import cold_report
        shutil.copyfile(a.cold, os.path.join(a.out, "latest-cold-raw.csv"))
        cs = cold_report.summarize(a.cold)
        ctg, cmd = cold_report.targets(cs), cold_report.markdown(cs)

    print()
    if summary:
        print(text_table(summary))
        print()
        for ok, text in tg:
            print(("  met   " if ok else "  MISSED ") + text)
        print()
    for title, table, tgts in (("Freeze (host):", fmd, ftg),
                                ("Cold and lazy restore (host):", cmd, ctg),
                                ("Verbs (Soft-RoCE guest, qemu TCG: emulated):", vmd, vtg)):
        if table:
            print(title)
            print()
            print(table)
            print()
            for ok, text in tgts:
                print(("  met   " if ok else "  MISSED ") + text)
            print()

    md = [BEGIN, "", "```", meta, "```", ""]
    if summary:
        md += ["Medians over n repetitions. `ckpt/limit`, `restore/limit`: the measured time "
               "divided by 1.25 x the same-run baseline (at most 1.00 meets the limit; "
               "the checkpoint limit applies to uncompressed checkpoints only). `vs CRIU`: "
               "restore until running divided by CRIU's, same guest boot (target at most 0.50). "
               "`compr.`: uncompressed image size / this image size.", "",
               md_table(summary), "",
               "Targets of issue 5 judged by this run:", ""]
        md += [f"- {'met' if ok else '**missed**'}: {t}" for ok, t in tg]
        md += ["", "Baselines (same run, same directory as the images; medians):", "",
               baseline_table(summary), "",
               "Compression (host):", "", compression_table(summary), "",
               "CRIU on the host:", "", "```", criu_host, "```", "",
               "CRIU in the guest:", "", "```", criu_guest, "```", ""]
    if vmd:
        md += ["Verbs (Soft-RoCE guest): the shim's overhead and the verbs job's checkpoint "
               "and restart. The guest is emulated (qemu TCG on the shared build machine): "
               "absolute times are many times a real machine's and noisy; what counts are "
               "the ratios of plain and shim runs interleaved in the same boot. Medians; "
               "`shim/plain`: median under the shim / median plain (the target's measure), "
               "`per round`: the range of the ratios of the runs of one round.", "",
               "```", verbs_meta, "```", "", vmd, "",
               "Targets of the verbs shim judged by this run:", ""]
        md += [f"- {'met' if ok else '**missed**'}: {t}" for ok, t in vtg]
        md += [""]
    if fmd:
        md += ["Freeze of trees and many threads (host, live checkpoints; `ibcr-frozen`: "
               "`--no-snapshot`, stopped for the whole write, as a tree with shared memory "
               "was before 2026-12-01; alternated in the same run; medians):", "", fmd, "",
               "Targets of issue 21 judged by this run:", ""]
        md += [f"- {'met' if ok else '**missed**'}: {t}" for ok, t in ftg]
        md += [""]
    if cmd:
        md += ["Cold and lazy restore (host; bench/restore_cold.sh): an incompressible "
               "workload's image restored cold (out of the page cache) and warm, eager and "
               "`--lazy` (running again / all in), beside reading it with O_DIRECT and the "
               "fill limit in the same run; medians and ranges:", "", cmd, "",
               "Targets of issue 21 judged by this run:", ""]
        md += [f"- {'met' if ok else '**missed**'}: {t}" for ok, t in ctg]
        md += [""]
    if have_png:
        md += ["![latest benchmark plot](../bench/results/latest.png)", ""]
    md += [END]
    section = "\n".join(md)
    with open(os.path.join(a.out, "latest.md"), "w") as f:
        f.write(section + "\n")
    if a.docs:
        text = open(a.docs).read() if os.path.exists(a.docs) else ""
        if BEGIN in text and END in text:
            pre = text[:text.index(BEGIN)]
            post = text[text.index(END) + len(END):]
            text = pre + section + post
        else:
            text = text.rstrip("\n") + "\n\n## Latest results\n\n" + section + "\n"
        with open(a.docs, "w") as f:
            f.write(text)
    if a.strict and not all(ok for ok, _ in tg + vtg + ftg + ctg):
        print("report: targets missed (--strict)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
