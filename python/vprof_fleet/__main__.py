"""Command line of vprof_fleet (docs/fleet.md):

    python -m vprof_fleet convert ROWS_DIR OUT_DIR --run R [--host H] [--default-host H]
                                                                      # TSV rows -> Parquet
    python -m vprof_fleet analyze DIR... [--json] [--query latency|nodes|places]
                                         [--spark spark://HOST:PORT]
    python -m vprof_fleet sql NAME                                    # print the portable SQL
    python -m vprof_fleet spark-cluster [--workers 2] [--memory 1g]   # a local Spark cluster

`vprof export --parquet` runs `convert`; `analyze` runs the SQL on DuckDB (or, with --spark,
on a Spark cluster) over the Parquet files under the folders given (many hosts and runs
concatenate). `spark-cluster` starts a Spark standalone cluster of local processes, prints
one JSON line {url, ui, pgids, scratch} and runs until its standard input closes or it gets
SIGTERM or SIGINT, then stops the cluster."""
import argparse
import json
import signal
import sys

from .sql import QUERIES, query_text


def _print_table(name, rows, out):
    out.write(f"== {name} ({len(rows)} rows)\n")
    if not rows:
        return
    cols = list(rows[0])
    out.write("\t".join(cols) + "\n")
    for r in rows:
        out.write("\t".join(f"{v:.6g}" if isinstance(v, float) else str(v)
                            for v in r.values()) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="vprof_fleet", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="the analyzer's TSV rows into Parquet")
    c.add_argument("rows_dir")
    c.add_argument("out_dir")
    c.add_argument("--host", help="the host column of every row (default: each interval's "
                                  "own, as the trace recorded it)")
    c.add_argument("--default-host", default="",
                   help="the host of intervals whose trace recorded none")
    c.add_argument("--run", required=True)
    c.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    a = sub.add_parser("analyze", help="the decomposition as SQL on DuckDB")
    a.add_argument("paths", nargs="+", help="folders (searched recursively) or .parquet files")
    a.add_argument("--json", action="store_true", help="one JSON object {query: rows}")
    a.add_argument("--query", action="append", choices=list(QUERIES),
                   help="only these queries (default: all)")
    a.add_argument("--threads", type=int)
    a.add_argument("--spark", metavar="MASTER",
                   help="run on Spark SQL at MASTER (spark://host:port, local[N]) instead")
    s = sub.add_parser("sql", help="print the portable SQL of one query")
    s.add_argument("name", choices=list(QUERIES))
    k = sub.add_parser("spark-cluster", help="a Spark standalone cluster of local processes")
    k.add_argument("--workers", type=int, default=2)
    k.add_argument("--cores", type=int, default=1, help="per worker")
    k.add_argument("--memory", default="1g", help="per worker, for its executors")
    k.add_argument("--daemon-memory", default="256m", help="JVM heap of the master and workers")
    k.add_argument("--scratch", help="logs and work folders (default: a temporary folder, "
                                     "removed at the end)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "convert":
            from .convert import convert
            got = convert(args.rows_dir, args.out_dir, host=args.host, run=args.run,
                          default_host=args.default_host)
            if not args.quiet:
                print(f"vprof_fleet: {got['intervals']} intervals, {got['node_times']} "
                      f"interval x node rows -> {args.out_dir}", file=sys.stderr)
        elif args.cmd == "analyze" and args.spark:
            from . import spark
            res = spark.decompose(args.paths, spark.session(args.spark),
                                  queries=tuple(args.query or QUERIES))
        elif args.cmd == "analyze":
            from .duck import decompose
            res = decompose(args.paths, queries=tuple(args.query or QUERIES),
                            threads=args.threads)
            if args.json:
                json.dump(res, sys.stdout)
                sys.stdout.write("\n")
            else:
                for name, rows in res.items():
                    _print_table(name, rows, sys.stdout)
        elif args.cmd == "spark-cluster":
            return _spark_cluster(args)
        else:
            print(query_text(args.name) + ";")
    except RuntimeError as e:  # no pyspark or java, or the cluster did not start
        print(f"vprof_fleet {args.cmd}: {e}", file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"vprof_fleet {args.cmd}: {e}: run `bash cmake/install-venv.sh` in the vprof "
              "source tree (the project venv has pyarrow and duckdb)", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError) as e:
        print(f"vprof_fleet {args.cmd}: {e}", file=sys.stderr)
        return 3
    return 0


def _spark_cluster(args) -> int:
    from .spark import StandaloneCluster

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with StandaloneCluster(workers=args.workers, cores=args.cores, memory=args.memory,
                           daemon_memory=args.daemon_memory, scratch=args.scratch) as c:
        print(json.dumps({"url": c.url, "ui": c.ui, "pgids": [p.pid for p in c.procs],
                          "scratch": str(c.scratch)}), flush=True)
        sys.stdin.read()  # until the caller closes our standard input (or dies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
