"""The two Parquet tables of `vprof export --parquet` (docs/fleet.md, "Schema").

intervals    one row per finished interval: which host and run it comes from, its type
             (label, '' when unlabelled) and its latency L on the critical path (ns).
node_times   one row per interval x calling-context-tree node that the interval's critical
             path touched (the node or one below it): T = the node's time on the path, B =
             its body (self) time, both in ns; a node absent for an interval has T = B = 0.
(host, run, interval_id) identifies an interval, so the files of many hosts and runs
concatenate; node is a stable key of the tree node within one workspace.
"""
import pyarrow as pa

_DICT = pa.dictionary(pa.int32(), pa.string())

INTERVALS_SCHEMA = pa.schema([
    ("host", _DICT),
    ("run", _DICT),
    ("label", _DICT),
    ("interval_id", pa.int64()),
    ("latency_ns", pa.float64()),
])

NODE_TIMES_SCHEMA = pa.schema([
    ("host", _DICT),
    ("run", _DICT),
    ("label", _DICT),
    ("interval_id", pa.int64()),
    ("latency_ns", pa.float64()),  # the interval's L again: the SQL needs no join of big tables
    ("node", _DICT),        # "/s12/s40/wait:mutex/s7": site ids, wait kinds (docs/statistics.md)
    ("parent", _DICT),      # the parent's node key; null for the root "/"
    ("depth", pa.int32()),  # 0 for the root
    ("kind", _DICT),        # root | site | wait | untracked
    ("frames", _DICT),      # "(interval);caller;callee": names joined by ';' (folded stacks)
    ("place", _DICT),       # the place key ("f:12", "x:fsync@7", "w:cond@f:3"); null: none
    ("place_name", _DICT),  # "fsync() in Wal::commit"; null when place is null
    ("via", _DICT),         # the place of the outermost wait above it (waker's work); null
    ("t_ns", pa.float64()),
    ("b_ns", pa.float64()),
])
