"""The decomposition's SQL, shipped as .sql files beside this module: standard SQL over the
tables `intervals` and `node_times` (CTEs, joins, UNION ALL, COUNT/SUM aggregates only), so
the same text runs on DuckDB, Spark SQL and Trino once those two names are bound to the
Parquet files (docs/fleet.md)."""
import importlib.resources

# name -> what the query returns, one row per ...
QUERIES = {
    "latency": "interval type: intervals, mean and Var(L)",
    "nodes": "interval type x tree node: mean, variance, share and contribution of T and B",
    "places": "interval type x place: mean, variance, share and contribution of its self time",
}


def query_text(name: str) -> str:
    """The text of sql/<name>.sql (one SELECT statement, no trailing semicolon)."""
    if name not in QUERIES:
        raise KeyError(f"no query {name!r}; known: {', '.join(QUERIES)}")
    text = importlib.resources.files(__package__).joinpath("sql", f"{name}.sql").read_text()
    return text.strip().rstrip(";")
