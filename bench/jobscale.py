#!/usr/bin/env python3
"""bench/jobscale.py CSV [--pmix FENCE_MS VERBS_BYTES] | --pmix FENCE_MS VERBS_BYTES:
the model of a job's coordination, checked and
projected (docs/benchmarks.md, "A job over many nodes").

CSV is bench/jobscale.sh's (nodes,rep,phase,seconds). The model is a
discrete-event simulation of ibcr-job's shared-directory engine: each of N
nodes starts `ibcr-job barrier` (cost START), which writes its file and
polls the directory every POLL s; a poll costs C0 + C1 * (files in the
directory) on a shared resource of K servers (this host's cores; a
cluster's file server), first come first served; a node passes once a poll
started after the last arrival; between barriers a node does the work of
the phase (none here but the exchange: N reads of C1 each). On this host
all of it is CPU work on the K servers. START, C0 and
C1 are fitted to the measured totals at the measured N (least squares over
a grid), the fit is printed next to the measurements, and the model is then
run for larger N on this host (K = 2). For a cluster the parts are taken
as measured one at a time, not fitted: START (a barrier command alone),
C0 (a poll of an empty directory) on every node's own CPU, and the
listing's cost per file (a directory of 10000 files) on one file server
(K = 1) that every node's polls share.

--pmix FENCE_MS VERBS_BYTES: the PMIx engine next to it (ibcr-pmix, one
fence with data collection per barrier). A fence of N nodes is a tree of
Slurm's TreeWidth (50) between the nodes' slurmstepds: up and down,
ceil(log50 N) levels each way (the 2-node fence
measured in the pair boot, FENCE_MS, is one level up and one down: a
level is half of it), and the data collected goes to every node: N times the bytes
per node, sent TreeWidth times per level by each parent at BW (an
assumption: 10 Gb/s). Per node: the four barriers' ~32 bytes each, the
restart's verbs tables (VERBS_BYTES per node, measured) in two more
fences.
"""
import csv
import heapq
import statistics
import sys

POLL = 0.05
PHASES = ("sends", "written", "addrs", "sockets")


def simulate(n, start, c0, c1, k, local=False):
    """Wall time of the four barriers and the exchange for n nodes. On one
    host (local False) every part is CPU work on the k shared servers; on
    a cluster (local True) START and C0 run on each node's own CPU and
    only the listing (C1 per file) on the k file servers."""
    free = [0.0] * k            # when each server is free
    heapq.heapify(free)

    def serve(ready, cost):
        s = heapq.heappop(free)
        begin = max(s, ready)
        heapq.heappush(free, begin + cost)
        return begin, begin + cost

    t = [0.0] * n               # each node's clock
    files = 0
    for phase in PHASES:
        if phase == "sockets":  # the exchange: every node reads n files
            for i in sorted(range(n), key=lambda j: t[j]):
                t[i] = serve(t[i], c1 * n)[1]
        if local:
            arrive = [x + start for x in t]
        else:
            arrive = [0.0] * n
            for i in sorted(range(n), key=lambda j: t[j]):
                arrive[i] = serve(t[i], start)[1]
        last = max(arrive)
        files += n
        for i in range(n):
            # polls at arrive[i], then every POLL: the first one that
            # starts after the last arrival lets node i pass
            p = arrive[i]
            while True:
                if local:
                    begin, end = serve(p + c0, c1 * files)
                else:
                    begin, end = serve(p, c0 + c1 * files)
                if begin >= last:
                    t[i] = end
                    break
                p = max(p + POLL, end)
    return max(t)


TREE = 50
BW = 1.25e9


def pmix_fence(n, hop, nbytes):
    """One fence with data collection over n nodes (seconds)."""
    levels, reach = 0, 1
    while reach < n:
        reach *= TREE
        levels += 1
    levels = max(levels, 1)
    return 2 * levels * hop + levels * min(n, TREE) * n * nbytes / BW


def pmix_job(n, hop, verbs_bytes):
    """The four barriers (the addresses in one), and the verbs rounds."""
    return 4 * pmix_fence(n, hop, 32) + 2 * pmix_fence(n, hop, verbs_bytes / 2)


def fit(meas, k):
    best = None
    for start in [x * 0.01 for x in range(1, 21)]:
        for c0 in [x * 0.002 for x in range(0, 16)]:
            for c1 in [x * 0.0002 for x in range(0, 16)]:
                err = sum(((simulate(n, start, c0, c1, k) - m) / m) ** 2
                          for n, m in meas.items())
                if best is None or err < best[0]:
                    best = (err, start, c0, c1)
    return best[1:]


def med(rows, phase):
    v = [float(r["seconds"]) for r in rows if r["phase"] == phase]
    return statistics.median(v) if v else 0.0


def pmix_only(hop_ms, verbs_bytes):
    """The PMIx model alone, without a run of jobscale.sh."""
    print("| nodes | PMIx model, cluster (s) |")
    print("|---:|---:|")
    for n in (2, 4, 8, 16, 32, 64, 128, 1024, 10000):
        print(f"| {n} | {pmix_job(n, hop_ms / 2e3, verbs_bytes):.2f} |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--pmix":
        pmix_only(float(sys.argv[2]), float(sys.argv[3]))
        return
    rows = list(csv.DictReader(open(sys.argv[1])))
    tot = {}
    for r in rows:
        if r["phase"] == "total":
            tot.setdefault(int(r["nodes"]), []).append(float(r["seconds"]))
    meas = {n: statistics.median(v) for n, v in sorted(tot.items())}
    start, c0, c1 = fit(meas, 2)
    print(f"fit (this host, all nodes on 2 cores): START {start * 1e3:.0f} ms, C0 "
          f"{c0 * 1e3:.1f} ms, C1 {c1 * 1e6:.0f} us/file, poll {POLL * 1e3:.0f} ms")
    l0 = med(rows, "list0")
    cstart = max(med(rows, "barrier1") - l0, 0.0)
    cfile = max(med(rows, "list10000") / 10000, 1e-7)
    print(f"parts alone (cluster model): START {cstart * 1e3:.0f} ms, C0 {l0 * 1e3:.1f} ms, "
          f"{cfile * 1e6:.2f} us per file listed")
    pm = None
    if len(sys.argv) == 5 and sys.argv[2] == "--pmix":
        pm = (float(sys.argv[3]) / 2e3, float(sys.argv[4]))
        print(f"PMIx: {pm[0] * 1e3:.1f} ms per tree level, TreeWidth {TREE}, "
              f"{pm[1]:.0f} verbs bytes per node, {BW * 8 / 1e9:.0f} Gb/s")
    print("| nodes | measured (s) | model, this host (s) | model, cluster (s) |"
          + (" PMIx model, cluster (s) |" if pm else ""))
    print("|---:|---:|---:|---:|" + ("---:|" if pm else ""))
    for n in sorted(set(meas) | {64, 128, 1024, 10000}):
        here = simulate(n, start, c0, c1, 2) if n <= 1024 else None
        clus = simulate(n, cstart, l0, cfile, 1, local=True)
        m = f"{meas[n]:.2f}" if n in meas else "-"
        h = f"{here:.2f}" if here is not None else "-"
        p = f" {pmix_job(n, pm[0], pm[1]):.2f} |" if pm else ""
        print(f"| {n} | {m} | {h} | {clus:.1f} |{p}")


if __name__ == "__main__":
    main()
