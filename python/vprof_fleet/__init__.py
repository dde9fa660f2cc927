"""vprof at fleet scale: the analyzer's per-interval node times (`vprof export --parquet`)
as Parquet files, and the variance decomposition — Var(L), every node's variance and
covariance with L (its contribution), the places table, per interval type — as standard SQL
that runs where a fleet's traces are stored (DuckDB here; Spark SQL, Trino). docs/fleet.md.

    from vprof_fleet import decompose
    result = decompose(["host-a/", "host-b/"])   # folders of vprof export --parquet
    result["latency"], result["nodes"], result["places"]   # lists of dicts
"""
from .schema import INTERVALS_SCHEMA, NODE_TIMES_SCHEMA  # noqa: F401
from .sql import QUERIES, query_text  # noqa: F401


def decompose(paths, **kwargs):
    """The decomposition on DuckDB over the Parquet files under `paths` (see duck.decompose)."""
    from .duck import decompose as _decompose
    return _decompose(paths, **kwargs)
