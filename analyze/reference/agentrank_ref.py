"""Independent numpy implementation of AgentRank's bootstrap statistics, written from the methodology
text (Methodology §8.3-§8.6 and DESIGN.md "Decisions"). Used only by tests and benchmarks to cross-check
the Rust analysis; it is not part of the published pipeline.

Reads a plain attempts table (CSV), keeps scored core attempts, counts PASS as 1 and FAIL / timeouts as 0
(everything else out of numerator, denominator and resampling), applies the adaptive attempt rule for full
coverage, then per category:
  * cluster bootstrap: tasks drawn with replacement once per resample and shared by every agent and
    server, then each drawn copy's attempts drawn with replacement independently per cell;
  * Completion CIs = 2.5/97.5 linear percentiles; competition ranks (ties within 1e-9) per resample;
    rank intervals = floor/ceil of the linear percentiles of the ranks; greedy bands;
  * Spearman (average ranks) of server Completion and of cell pass rates for every agent pair, with CIs
    from the same resamples (constant resamples dropped and counted);
  * first-try success with its Wilson interval (z = 1.96).

Usage: agentrank_ref.py ATTEMPTS.csv --seed N --resamples B --out OUT.json [--bands-from analysis.json]
"""

import argparse
import csv
import json
import math
from collections import defaultdict

import numpy as np
from scipy.stats import rankdata

HEADLINE = {"PASS": 1, "FAIL": 0, "SERVER_TIMEOUT": 0, "AGENT_TIMEOUT": 0}
TIE = 1e-9
CHUNK = 500


def load(path):
    cats = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if (r.get("role") or "scored") != "scored":
                continue
            if (r.get("class") or "core") != "core":
                continue
            o = HEADLINE.get(r["outcome"].strip())
            if o is None:
                continue
            idx = int(r.get("attempt_index") or 0)
            cats[r["category"]][(r["agent"], r["server"], r["task"])].append((idx, r["attempt"], o))
    return cats


def rule_complete(outcomes, low_sample):
    if low_sample:
        return len(outcomes) >= 1
    return len(outcomes) >= 2 and (outcomes[0] == outcomes[1] or len(outcomes) >= 5)


def wilson(k, n, z=1.96):
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [p, max(0.0, c - h), min(1.0, c + h)]


def bands(names, points, intervals):
    order = sorted(range(len(names)), key=lambda i: (-points[i], names[i]))
    out = []
    for i in order:
        lo, hi = intervals[i]
        if out and all(lo <= intervals[j][1] and intervals[j][0] <= hi for j in out[-1]):
            out[-1].append(i)
        else:
            out.append([i])
    return [sorted(names[i] for i in b) for b in out]


def rowwise_spearman(x, y):
    """x, y: (n, R). Spearman per column; NaN where either column is constant."""
    rx = rankdata(x, axis=0, method="average")
    ry = rankdata(y, axis=0, method="average")
    rx = rx - rx.mean(axis=0)
    ry = ry - ry.mean(axis=0)
    sxx = (rx * rx).sum(axis=0)
    syy = (ry * ry).sum(axis=0)
    sxy = (rx * ry).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = sxy / np.sqrt(sxx * syy)
    rho[(sxx <= 0) | (syy <= 0)] = np.nan
    return np.clip(rho, -1.0, 1.0)


def summarize_rho(point, draws, n_points):
    used = draws[~np.isnan(draws)]
    out = {
        "point": point,
        "dropped": int(np.isnan(draws).sum()),
        "used": int(used.size),
        "n_points": n_points,
        "sd": float(used.std()) if used.size else None,
    }
    out["ci"] = [float(v) for v in np.percentile(used, [2.5, 97.5])] if used.size else None
    return out


def analyse_category(cells, seed, resamples, category_index, low_sample=("codex",)):
    agents = sorted({a for a, _, _ in cells})
    servers = sorted({s for _, s, _ in cells})
    tasks = sorted({t for _, _, t in cells})
    A, S, T = len(agents), len(servers), len(tasks)
    M = max(len(v) for v in cells.values())
    P = np.zeros((A, S, T, M))
    m = np.zeros((A, S, T), dtype=np.int64)
    first = {}
    for (a, s, t), v in cells.items():
        v = sorted(v)
        ai, si, ti = agents.index(a), servers.index(s), tasks.index(t)
        m[ai, si, ti] = len(v)
        P[ai, si, ti, : len(v)] = [o for _, _, o in v]
        first[(ai, si, ti)] = v[0][2]
    board = np.zeros((A, S), dtype=bool)
    for ai, a in enumerate(agents):
        for si in range(S):
            ok = True
            for ti in range(T):
                outs = [int(x) for x in P[ai, si, ti, : m[ai, si, ti]]]
                ok &= rule_complete(outs, a in low_sample)
            board[ai, si] = ok

    with np.errstate(invalid="ignore", divide="ignore"):
        rate_point = np.where(m > 0, P.sum(-1) / np.maximum(m, 1), 0.0)
    comp_point = rate_point.mean(-1)  # (A, S)

    rng = np.random.default_rng([seed, category_index])
    comp = np.empty((A, S, resamples))
    pairs = [(i, j) for i in range(A) for j in range(i + 1, A)]
    common = {}
    for i, j in pairs:
        common[(i, j)] = [s for s in range(S) if board[i, s] and board[j, s]]
    srho = {p: np.empty(resamples) for p in pairs}
    crho = {p: np.empty(resamples) for p in pairs}
    karange = np.arange(M)
    for start in range(0, resamples, CHUNK):
        R = min(CHUNK, resamples - start)
        idx = rng.integers(0, T, size=(R, T))  # shared task draw per resample
        mm = m[:, :, idx]  # (A, S, R, T)
        u = rng.random((A, S, R, T, M))
        draw = np.floor(u * mm[..., None]).astype(np.int64)
        Pidx = P[:, :, idx, :]  # (A, S, R, T, M)
        vals = np.take_along_axis(Pidx, draw, axis=-1)
        vals = np.where(karange < mm[..., None], vals, 0.0)
        rates = vals.sum(-1) / np.maximum(mm, 1)  # (A, S, R, T)
        comp[:, :, start : start + R] = rates.mean(-1)
        for i, j in pairs:
            cs = common[(i, j)]
            if not cs:
                srho[(i, j)][start : start + R] = np.nan
                crho[(i, j)][start : start + R] = np.nan
                continue
            x = comp[i, cs, start : start + R]
            y = comp[j, cs, start : start + R]
            srho[(i, j)][start : start + R] = rowwise_spearman(x, y)
            xc = rates[i, cs].transpose(0, 2, 1).reshape(len(cs) * T, R)
            yc = rates[j, cs].transpose(0, 2, 1).reshape(len(cs) * T, R)
            crho[(i, j)][start : start + R] = rowwise_spearman(xc, yc)

    out = {"completion": {}, "ranks": {}, "bands": {}, "agreement": [], "first_try": {}}
    for ai, a in enumerate(agents):
        bs = [si for si in range(S) if board[ai, si]]
        if not bs:
            continue
        c = comp[ai, bs]  # (S_a, R)
        ranks = 1 + (c[None, :, :] > c[:, None, :] + TIE).sum(axis=1)  # (S_a, R)
        pts = comp_point[ai, bs]
        prank = 1 + (pts[None, :] > pts[:, None] + TIE).sum(axis=1)
        lo, hi = np.percentile(c, [2.5, 97.5], axis=1)
        rlo, rhi = np.percentile(ranks, [2.5, 97.5], axis=1)
        names = [servers[si] for si in bs]
        out["completion"][a] = {}
        out["ranks"][a] = {}
        out["first_try"][a] = {}
        intervals = []
        for k, si in enumerate(bs):
            out["completion"][a][servers[si]] = {
                "point": float(pts[k]),
                "ci": [float(lo[k]), float(hi[k])],
                "sd": float(c[k].std()),
            }
            iv = [int(math.floor(rlo[k])), int(math.ceil(rhi[k]))]
            intervals.append(iv)
            out["ranks"][a][servers[si]] = {"point": int(prank[k]), "interval": iv}
            kk = sum(first[(ai, si, ti)] for ti in range(T) if (ai, si, ti) in first)
            nn = sum(1 for ti in range(T) if (ai, si, ti) in first)
            out["first_try"][a][servers[si]] = wilson(kk, nn)
        out["bands"][a] = bands(names, [float(p) for p in pts], intervals)
    for i, j in pairs:
        cs = common[(i, j)]
        from scipy.stats import spearmanr

        def tied(v):
            # Point Completions within TIE of each other are one value (the method's tie rule); a mean
            # of rates summed in another order can differ from its twin in the last bit.
            v = np.asarray(v, dtype=float).copy()
            order = np.argsort(v, kind="stable")
            for k in range(1, len(order)):
                if v[order[k]] - v[order[k - 1]] <= TIE:
                    v[order[k]] = v[order[k - 1]]
            return v

        def point_rho(x, y):
            x, y = tied(x), tied(y)
            if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
                return None
            return float(spearmanr(x, y).statistic)

        sp = point_rho(comp_point[i, cs], comp_point[j, cs])
        cp = point_rho(rate_point[i, cs].reshape(-1), rate_point[j, cs].reshape(-1))
        out["agreement"].append(
            {
                "agents": [agents[i], agents[j]],
                "server_rho": summarize_rho(sp, srho[(i, j)], len(cs)),
                "cell_rho": summarize_rho(cp, crho[(i, j)], len(cs) * T),
            }
        )
    out["tasks"] = T
    out["max_attempts"] = int(M)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attempts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bands-from", help="recompute bands from another analysis.json's points and rank intervals")
    args = ap.parse_args()
    cats = load(args.attempts)
    result = {"categories": {}}
    for ci, c in enumerate(sorted(cats)):
        result["categories"][c] = analyse_category(cats[c], args.seed, args.resamples, ci)
    if args.bands_from:
        with open(args.bands_from) as f:
            other = json.load(f)
        rebanded = {}
        for c, cat in other["categories"].items():
            rebanded[c] = {}
            for a, servers in cat["ranks"].items():
                names = sorted(servers)
                pts = [cat["completion"][a][s]["point"] for s in names]
                ivs = [servers[s]["interval"] for s in names]
                rebanded[c][a] = bands(names, pts, ivs)
        result["bands_from_other"] = rebanded
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
