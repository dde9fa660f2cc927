"""The decomposition on DuckDB: binds the tables `intervals` and `node_times` to Parquet
files (the only DuckDB-specific part: read_parquet over a list of files) and runs the
standard SQL of sql/*.sql on them."""
import pathlib

import duckdb

from .sql import QUERIES, query_text


def parquet_files(paths, table: str) -> list[str]:
    """`table`.parquet in every folder of `paths` (folders are searched recursively, so a tree
    host/run/*.parquet works), and the files named directly. Raises FileNotFoundError when
    there are none."""
    files = []
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            files += sorted(str(f) for f in p.rglob(f"{table}.parquet"))
        elif p.name == f"{table}.parquet":
            files.append(str(p))
    if not files:
        raise FileNotFoundError(f"no {table}.parquet under {', '.join(map(str, paths))}")
    return files


def connect(paths, threads: int | None = None, memory_limit: str | None = None):
    """A DuckDB connection with the views intervals and node_times over the Parquet files."""
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    for table in ("intervals", "node_times"):
        files = parquet_files(paths, table)
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}])")
    return con


def run_query(con, name: str) -> list[dict]:
    cur = con.execute(query_text(name))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


def decompose(paths, queries=tuple(QUERIES), threads=None, memory_limit=None) -> dict:
    """{query name: rows as dicts} of the decomposition over the Parquet files under `paths`
    (folders written by `vprof export --parquet`, of any number of hosts and runs)."""
    con = connect(paths, threads=threads, memory_limit=memory_limit)
    try:
        return {q: run_query(con, q) for q in queries}
    finally:
        con.close()
