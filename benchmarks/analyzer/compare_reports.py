#!/usr/bin/env python3
"""Compares two analyses of one trace (`vprof-analyze DIR --json` before and after a change
of the statistics): every variance, covariance and contribution of the nodes, factors,
places, waits and what-ifs, per group, as |a - b| / Var(L) (the scale of the shares) and as
|a - b| / |a| where |a| > 1e-6 Var(L); the latency statistics exactly; and the factors'
bootstrap intervals, centre and width differences in units of the older interval's width.
Exit status 1 when a variance or covariance differs by more than --tol x Var(L).

    benchmarks/analyzer/compare_reports.py before.json after.json [--tol 1e-9]
"""
import argparse
import json
import sys

VAR_FIELDS = {
    "nodes": ["var_ns2", "body_var_ns2", "share", "contribution", "body_contribution"],
    "factors": ["term_ns2", "share", "net_share"],
    "places": ["var_ns2", "share", "contribution"],
    "waits": ["var_ns2", "share", "contribution"],
    "whatif": ["var_after_ns2", "var_drop"],
}
MEAN_FIELDS = {"nodes": ["mean_ns", "body_mean_ns"], "places": ["mean_ns"], "waits": ["mean_ns"]}
KEY = {"nodes": "node", "factors": "key", "places": "key", "waits": "key", "whatif": "key"}
RATIO_FIELDS = {"share", "contribution", "body_contribution", "net_share", "var_drop"}


def compare_group(a, b, tol, out):
    var_l = a["latency"]["var_ns2"]
    worst_abs = worst_rel = 0.0
    worst_where = ""
    for k in ("count", "mean_ns", "var_ns2", "p50_ns", "p95_ns", "p99_ns", "min_ns", "max_ns"):
        if a["latency"][k] != b["latency"][k]:
            d = abs(a["latency"][k] - b["latency"][k]) / max(abs(a["latency"][k]), 1e-300)
            out.append(f"  latency {k}: {a['latency'][k]!r} vs {b['latency'][k]!r} (rel {d:.1e})")
            if k == "var_ns2":
                worst_rel = max(worst_rel, d)
    for part, fields in VAR_FIELDS.items():
        by_key = {x[KEY[part]]: x for x in b.get(part, [])}
        for x in a.get(part, []):
            y = by_key.get(x[KEY[part]])
            if y is None:
                continue  # truncated lists (places beyond max_factors) may differ at the edge
            for f in fields:
                scale = 1.0 if f in RATIO_FIELDS else var_l
                d = abs(x[f] - y[f])
                if d / scale > worst_abs:
                    worst_abs, worst_where = d / scale, f"{part} {x[KEY[part]]} {f}"
                if abs(x[f]) > 1e-6 * scale:
                    worst_rel = max(worst_rel, d / abs(x[f]))
        for f in MEAN_FIELDS.get(part, []):
            for x in a.get(part, []):
                y = by_key.get(x[KEY[part]])
                if y is not None and abs(x[f]) > 0:
                    worst_rel = max(worst_rel, abs(x[f] - y[f]) / abs(x[f]))
    ci = []
    by_key = {x["key"]: x for x in b["factors"]}
    for x in a["factors"]:
        y = by_key.get(x["key"])
        if y is None or not x.get("share_ci") or not y.get("share_ci"):
            continue
        (lo_a, hi_a), (lo_b, hi_b) = x["share_ci"], y["share_ci"]
        w = hi_a - lo_a
        if w > 0:
            ci.append((abs((lo_b + hi_b) / 2 - (lo_a + hi_a) / 2) / w, (hi_b - lo_b) / w))
    out.append(f"  max |a - b| / Var(L): {worst_abs:.2e} ({worst_where}); max relative: "
               f"{worst_rel:.2e}")
    if ci:
        ci.sort()
        out.append(f"  bootstrap intervals of {len(ci)} factors: centre moved by at most "
                   f"{max(c for c, _ in ci):.2f} widths (median {ci[len(ci) // 2][0]:.2f}); "
                   f"width ratio after/before {min(r for _, r in ci):.2f} .. "
                   f"{max(r for _, r in ci):.2f}")
    order_a = [x["key"] for x in a["factors"]]
    order_b = [x["key"] for x in b["factors"]]
    if order_a != order_b:
        out.append("  factor order differs")
    return worst_abs <= tol


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--tol", type=float, default=1e-9)
    args = ap.parse_args()
    a, b = (json.load(open(p)) for p in (args.before, args.after))
    ok = True
    for ga in a["groups"]:
        gb = next((g for g in b["groups"] if g["label"] == ga["label"]), None)
        out = []
        if gb is None:
            print(f"group '{ga['label']}': missing after")
            ok = False
            continue
        ok = compare_group(ga, gb, args.tol, out) and ok
        print(f"group '{ga['label']}' ({ga['latency']['count']} intervals):")
        print("\n".join(out))
    print("notes before:", a.get("notes"), "\nnotes after:", b.get("notes"))
    print("OK" if ok else f"DIFFERENT beyond {args.tol:g} x Var(L)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
