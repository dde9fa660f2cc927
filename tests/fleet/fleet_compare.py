"""Compares the fleet SQL's decomposition (DuckDB: python -m vprof_fleet analyze --json; or
Spark SQL) with the analyzer's own JSON report (`vprof analyze --json`): every group's Var(L),
every node's and every place's statistics. Run by tests/fleet/test_fleet_sql.py and
tests/fleet/test_spark.py with the project venv's python:

    fleet_compare.py [--sqlite] REPORT.json PARQUET_DIR [PARQUET_DIR...]   # prints JSON
    fleet_compare.py --spark MASTER CASES.json                             # prints JSON

--sqlite also runs the same SQL text on SQLite (Python's sqlite3, the rows loaded from the
Parquet files): a second engine, with none of DuckDB's extensions, must give DuckDB's rows.

--spark runs the SQL on Spark at MASTER (spark://host:port) instead of DuckDB, for every case
of CASES.json ({name: {"report": REPORT.json, "dirs": [PARQUET_DIR, ...]}}) in one
SparkSession, and prints {"spark": {master, executors, seconds}, "cases": {name: result}};
Spark's rows must also equal DuckDB's (same columns, same order, within REL).

Several folders may hold copies of the same run under other host names (`--host`): every
interval then counts once per copy, and the population moments are the same.

Numbers must agree within REL (relative). A quantity whose exact value is 0 (a node that
never varies) is compared on the scale of its group, |a - b| <= REL * Var(L) (or REL for a
ratio), which the same rounding gives."""
import concurrent.futures
import json
import os
import sqlite3
import sys
import time

import pyarrow.parquet as pq

from vprof_fleet import decompose
from vprof_fleet.duck import parquet_files
from vprof_fleet.sql import QUERIES, query_text

REL = 1e-9


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= REL * max(abs(a), abs(b)) or abs(a - b) <= REL * 1e-3 * scale


def on_sqlite(paths) -> dict:
    """{query: rows} of the portable SQL run by SQLite over the rows of the Parquet files."""
    con = sqlite3.connect(":memory:")
    for table in ("intervals", "node_times"):
        for n, f in enumerate(parquet_files(paths, table)):
            t = pq.read_table(f)
            if n == 0:
                con.execute(f"CREATE TABLE {table} ({', '.join(t.column_names)})")
            marks = ", ".join("?" * t.num_columns)
            con.executemany(f"INSERT INTO {table} VALUES ({marks})",
                            zip(*(c.to_pylist() for c in t.columns)))
    out = {}
    for q in QUERIES:
        cur = con.execute(query_text(q))
        cols = [d[0] for d in cur.description]
        out[q] = [dict(zip(cols, r)) for r in cur.fetchall()]
    return out


def same_rows(a: list, b: list, what: str) -> list:
    """Differences between two engines' rows of one query (matched by their text columns)."""
    key = _key
    bad, other = [], {key(r): r for r in b}
    if len(a) != len(b):
        bad.append(f"{what}: {len(a)} vs {len(b)} rows")
    for r in a:
        o = other.get(key(r))
        if o is None:
            bad.append(f"{what} {key(r)}: missing")
            continue
        for c, v in r.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if abs(v - o[c]) > REL * max(abs(v), abs(o[c])):
                    bad.append(f"{what} {key(r)} {c}: {v!r} vs {o[c]!r}")
    return bad


def against_report(report: dict, got: dict, copies: int, engine: str) -> dict:
    """The engine's rows `got` ({query: rows}) against the analyzer's `report`, whose trace
    is in the Parquet files `copies` times (under other host names)."""
    path_of = {n["id"]: n["path"] for n in report["nodes"]}
    worst, checked, bad = 0.0, 0, []  # worst: the largest relative difference

    def check(what, a, b, scale):
        nonlocal worst, checked
        checked += 1
        denom = max(abs(a), abs(b))
        if denom > 0:
            worst = max(worst, abs(a - b) / denom)
        if not close(a, b, scale):
            bad.append(f"{what}: analyzer {a!r}, {engine} {b!r}")

    lat = {r["label"]: r for r in got["latency"]}
    nodes = {(r["label"], r["node"]): r for r in got["nodes"]}
    places = {(r["label"], r["place"]): r for r in got["places"]}
    groups = report["groups"]
    if sorted(lat) != sorted(g["label"] for g in groups):
        bad.append(f"groups: analyzer {[g['label'] for g in groups]}, {engine} "
                   f"{sorted(lat)}")
    n_nodes = n_places = 0
    for g in groups:
        label, l = g["label"], g["latency"]
        d = lat.get(label)
        if d is None:
            continue
        var_l = l["var_ns2"]
        if d["intervals"] != l["count"] * copies:  # copies under other host names
            bad.append(f"[{label}] intervals: {l['count']} vs {d['intervals']}")
        check(f"[{label}] mean L", l["mean_ns"], d["mean_ns"], l["mean_ns"])
        check(f"[{label}] Var(L)", var_l, d["var_ns2"], var_l)
        seen = 0
        for ns in g["nodes"]:
            key = (label, path_of[ns["node"]])
            r = nodes.get(key)
            if r is None:
                bad.append(f"{key}: not in the {engine} result")
                continue
            seen += 1
            for a, b, scale in (("mean_ns", "mean_ns", l["mean_ns"]),
                                ("var_ns2", "var_ns2", var_l),
                                ("body_mean_ns", "body_mean_ns", l["mean_ns"]),
                                ("body_var_ns2", "body_var_ns2", var_l),
                                ("share", "share", 1.0),
                                ("contribution", "contribution", 1.0),
                                ("body_contribution", "body_contribution", 1.0)):
                check(f"{key} {a}", ns[a], r[b], scale)
        if seen != sum(1 for k in nodes if k[0] == label):
            bad.append(f"[{label}] nodes: analyzer {seen}, {engine} "
                       f"{sum(1 for k in nodes if k[0] == label)}")
        n_nodes += seen
        for p in g["places"]:
            key = (label, p["key"])
            r = places.get(key)
            if r is None:
                bad.append(f"{key}: place not in the {engine} result")
                continue
            n_places += 1
            if r["name"] != p["name"] or r["contexts"] != p["contexts"]:
                bad.append(f"{key}: name/contexts {p['name']!r}/{p['contexts']} vs "
                           f"{r['name']!r}/{r['contexts']}")
            for a, scale in (("mean_ns", l["mean_ns"]), ("var_ns2", var_l), ("share", 1.0),
                             ("contribution", 1.0)):
                check(f"{key} {a}", p[a], r[a], scale)
    return {"checked": checked, "nodes": n_nodes, "places": n_places, "groups": len(groups),
            "worst_rel": worst, "mismatches": bad[:20], "n_mismatches": len(bad)}


def same_columns(a: dict, b: dict, what: str) -> list:
    """Two engines' results must have the same columns in the same order, row order too."""
    bad = []
    for q in QUERIES:
        if a[q] and b[q] and list(a[q][0]) != list(b[q][0]):
            bad.append(f"{what} {q} columns: {list(a[q][0])} vs {list(b[q][0])}")
        if [_key(r) for r in a[q]] != [_key(r) for r in b[q]]:
            bad.append(f"{what} {q}: rows in another order")
    return bad


def _key(r: dict) -> tuple:
    return tuple(v for v in r.values() if isinstance(v, str) or v is None)


def on_spark(master: str, cases: dict, threads: int = 2) -> dict:
    """Every case of `cases` on Spark at `master`, in one SparkSession; `threads` cases at a
    time (each thread a child session of its own, for its own temporary views), so that the
    driver's planning of one overlaps the executors' work on another."""
    from vprof_fleet import spark as vspark
    t0 = time.monotonic()
    spark = vspark.session(master, shuffle_partitions=2)
    started = time.monotonic() - t0
    out = {}

    def one(name: str, case: dict, session) -> None:
        t = time.monotonic()
        got = vspark.decompose(case["dirs"], session)
        seconds = time.monotonic() - t
        res = against_report(json.load(open(case["report"])), got, len(case["dirs"]), "Spark")
        duck = decompose(case["dirs"])
        bad = same_columns(duck, got, "DuckDB vs Spark")
        for q in QUERIES:
            bad += same_rows(duck[q], got[q], f"DuckDB vs Spark {q}")
        res["mismatches"] += bad[:20]
        res["n_mismatches"] += len(bad)
        res["seconds"] = round(seconds, 2)
        out[name] = res

    def worker(names: list, session) -> None:
        for name in names:
            one(name, cases[name], session)

    try:
        names, sessions = list(cases), [spark.newSession() for _ in range(threads)]
        for s in sessions:
            s.conf.set("spark.sql.shuffle.partitions", "2")
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for f in [pool.submit(worker, names[i::threads], sessions[i])
                      for i in range(threads)]:
                f.result()
        # the executors that ran the queries, and how many tasks each
        tasks = {e["id"]: e["totalTasks"] for e in vspark.executors(spark)}
        info = {"master": spark.sparkContext.master, "executor_tasks": tasks,
                "driver_java_options": spark.sparkContext.getConf().get(
                    "spark.driver.extraJavaOptions", ""),
                "session_s": round(started, 2), "total_s": round(time.monotonic() - t0, 2),
                "version": spark.version}
    finally:
        spark.stop()
    return {"spark": info, "cases": {n: out[n] for n in cases}}


def stdout_for_json():
    """A file on this process's stdout for the JSON alone; the descriptor 1 itself then
    points at stderr, so that what a child (Spark's driver JVM) writes to its inherited
    stdout cannot mix with the JSON."""
    out = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    return out


def main(argv) -> int:
    if argv[0] == "--spark":
        out = stdout_for_json()
        res = on_spark(argv[1], json.load(open(argv[2])))
        json.dump(res, out)
        out.write("\n")
        out.flush()
        return 1 if any(c["n_mismatches"] for c in res["cases"].values()) else 0
    sqlite = argv[0] == "--sqlite"
    argv = argv[1:] if sqlite else argv
    got = decompose(argv[1:])
    res = against_report(json.load(open(argv[0])), got, len(argv) - 1, "DuckDB")
    if sqlite:
        lite = on_sqlite(argv[1:])
        bad = []
        for q in QUERIES:
            bad += same_rows(got[q], lite[q], f"sqlite {q}")
        res["mismatches"] += bad[:20]
        res["n_mismatches"] += len(bad)
    res["sqlite"] = sqlite
    json.dump(res, sys.stdout)
    print()
    return 1 if res["n_mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
