"""The analyzer's rows (the TSV files `vprof export --parquet` has export_rows write, see
analyzer.hpp) into the two Parquet tables of schema.py, with the host and run columns.
Streams node_times in batches: memory stays at a batch plus the intervals' labels."""
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
import pyarrow.parquet as pq

from .schema import INTERVALS_SCHEMA, NODE_TIMES_SCHEMA

# The TSVs hold no quoting: text fields have their tabs and line breaks replaced.
_PARSE = csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False)


def _convert_opts(types):
    # '' stays an empty string: an unlabelled interval; a node without a place (_nullable)
    return csv.ConvertOptions(column_types=types, strings_can_be_null=False,
                              quoted_strings_can_be_null=False)


def _constant(value: str, n: int) -> pa.DictionaryArray:
    return pa.repeat(pa.scalar(value, pa.string()), n).dictionary_encode()


def _dict_take(indices: pa.Array, dictionary: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pc.cast(indices, pa.int32()), dictionary)


def _nullable(col: pa.Array) -> pa.Array:
    """'' -> null (no place, no parent, no via)."""
    return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)


def _hosts(ivs, host, default_host: str) -> pa.DictionaryArray:
    """The host of each interval: `host` for all when given; else the one intervals.tsv
    names (the host name the trace recorded where the interval began), `default_host` where
    it names none (a trace of an older runtime, or rows without the column)."""
    n = ivs.num_rows
    if host is not None or "host" not in ivs.column_names:
        return _constant(host if host is not None else default_host, n)
    col = ivs["host"].combine_chunks()
    return pc.if_else(pc.equal(col, ""), pa.scalar(default_host, pa.string()),
                      col).dictionary_encode()


def convert(rows_dir, out_dir, host, run: str, default_host: str = "",
            batch_bytes: int = 64 << 20) -> dict:
    """Writes out_dir/intervals.parquet and out_dir/node_times.parquet from the TSV files in
    rows_dir; returns {"intervals": n, "node_times": rows}. `host`: the host column of every
    row, or None: each interval's own (intervals.tsv), else `default_host`. Raises
    FileNotFoundError when a TSV is missing, ValueError on a malformed one."""
    rows_dir, out_dir = pathlib.Path(rows_dir), pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    nodes = csv.read_csv(rows_dir / "nodes.tsv", parse_options=_PARSE,
                         convert_options=_convert_opts(
                             {"node": pa.int32(), "parent": pa.int32(), "depth": pa.int32(),
                              **{c: pa.string() for c in ("kind", "path", "frames", "name",
                                                          "place", "place_name", "via")}}))
    if nodes.num_rows and pc.any(pc.not_equal(nodes["node"], pa.array(
            range(nodes.num_rows), pa.int32()))).as_py():
        raise ValueError(f"{rows_dir / 'nodes.tsv'}: node ids are not 0..N-1 in order")
    col = {name: nodes[name].combine_chunks() for name in nodes.column_names}
    # the parent's path key per node (null for the root), the place columns '' -> null
    parent_index = pc.if_else(pc.less(col["parent"], 0), pa.scalar(None, pa.int32()),
                              col["parent"])
    node_cols = {
        "node": col["path"],
        "parent": pc.take(col["path"], parent_index),
        "kind": col["kind"],
        "frames": col["frames"],
        "place": _nullable(col["place"]),
        "place_name": _nullable(col["place_name"]),
        "via": _nullable(col["via"]),
    }
    depth = col["depth"]

    ivs = csv.read_csv(rows_dir / "intervals.tsv", parse_options=_PARSE,
                       convert_options=_convert_opts({"interval": pa.int64(), "label": pa.string(),
                                                      "latency_ns": pa.float64(),
                                                      "host": pa.string()}))
    labels = ivs["label"].combine_chunks().dictionary_encode()
    hosts = _hosts(ivs, host, default_host)
    n_iv = ivs.num_rows
    pq.write_table(pa.Table.from_arrays([
        hosts, _constant(run, n_iv), labels,
        ivs["interval"].combine_chunks(), ivs["latency_ns"].combine_chunks()],
        schema=INTERVALS_SCHEMA), out_dir / "intervals.parquet")

    # node_times rows come grouped by interval in the order of intervals.tsv
    interval_ids = ivs["interval"].combine_chunks()
    latencies = ivs["latency_ns"].combine_chunks()
    reader = csv.open_csv(rows_dir / "node_times.tsv",
                          read_options=csv.ReadOptions(block_size=batch_bytes),
                          parse_options=_PARSE, convert_options=_convert_opts(
                              {"interval": pa.int64(), "node": pa.int32(),
                               "t_ns": pa.float64(), "b_ns": pa.float64()}))
    total = 0
    with pq.ParquetWriter(out_dir / "node_times.parquet", NODE_TIMES_SCHEMA) as writer:
        for batch in reader:
            n = batch.num_rows
            if n == 0:
                continue
            pos = pc.index_in(batch.column("interval"), value_set=interval_ids)
            if pos.null_count:
                raise ValueError(f"{rows_dir / 'node_times.tsv'}: a row of an interval that "
                                 "intervals.tsv does not have")
            node = batch.column("node")
            cols = [
                _dict_take(pc.take(hosts.indices, pos), hosts.dictionary), _constant(run, n),
                _dict_take(pc.take(labels.indices, pos), labels.dictionary),
                batch.column("interval"),
                pc.take(latencies, pos),
                _dict_take(node, node_cols["node"]),
                pc.take(node_cols["parent"], node).dictionary_encode(),
                pc.take(depth, node),
                _dict_take(node, node_cols["kind"]),
                _dict_take(node, node_cols["frames"]),
                pc.take(node_cols["place"], node).dictionary_encode(),
                pc.take(node_cols["place_name"], node).dictionary_encode(),
                pc.take(node_cols["via"], node).dictionary_encode(),
                batch.column("t_ns"), batch.column("b_ns"),
            ]
            writer.write_table(pa.Table.from_arrays(cols, schema=NODE_TIMES_SCHEMA))
            total += n
    return {"intervals": n_iv, "node_times": total}
