"""Fleet benchmark, the DuckDB side (benchmarks/fleet/run.sh): the three queries of
python/vprof_fleet (latency, nodes, places) over the Parquet folders given, run with the
project venv's python. Prints JSON: seconds per query and in all, peak RSS, Var(L) per group.

    duck_bench.py [--threads T] [--memory-limit 8GB] DIR...
"""
import argparse
import json
import resource
import time

from vprof_fleet.duck import connect, run_query
from vprof_fleet.sql import QUERIES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int)
    ap.add_argument("--memory-limit", help="DuckDB's memory_limit (beyond it, it spills to disk)")
    ap.add_argument("--temp-directory", help="where DuckDB spills")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    t0 = time.monotonic()
    con = connect(args.paths, threads=args.threads, memory_limit=args.memory_limit)
    if args.temp_directory:
        con.execute("SET temp_directory = ?", [args.temp_directory])
    seconds, rows, out = {}, {}, {}
    for q in QUERIES:
        t = time.monotonic()
        out[q] = run_query(con, q)
        seconds[q] = round(time.monotonic() - t, 3)
        rows[q] = len(out[q])
    n_rows = con.execute("SELECT COUNT(*) FROM node_times").fetchone()[0]
    print(json.dumps({
        "threads": args.threads or con.execute("SELECT current_setting('threads')").fetchone()[0],
        "node_times_rows": n_rows, "seconds": seconds,
        "total_s": round(time.monotonic() - t0, 3), "result_rows": rows,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "groups": [{"label": r["label"], "intervals": r["intervals"], "var_ns2": r["var_ns2"]}
                   for r in out["latency"]]}))


if __name__ == "__main__":
    main()
