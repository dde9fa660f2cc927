"""Fleet benchmark, the Spark side (benchmarks/fleet/run.sh): a Spark standalone cluster of
local processes (a master and WORKERS workers, one core each; vprof_fleet.spark) runs the
three queries of python/vprof_fleet over the Parquet folders given, with the project venv's
python. Prints JSON: seconds to start the cluster and the session and per query, and memory:
every process's peak RSS sampled from /proc every 0.2 s (executors, worker and master
daemons, the driver's JVM) and the executors' peak JVM heap as Spark's REST API reports it.

    spark_bench.py [--workers 2] [--executor-memory 2g] [--shuffle-partitions N] DIR...
"""
import argparse
import json
import os
import pathlib
import threading
import time

from vprof_fleet import spark as vspark
from vprof_fleet.sql import QUERIES


class RssSampler(threading.Thread):
    """Peak VmRSS per process of `roots()` (pids) and their descendants, every `period` s."""

    def __init__(self, roots, period: float = 0.2):
        super().__init__(daemon=True)
        self.roots, self.period = roots, period
        self.peak, self.role, self.peak_sum = {}, {}, 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            total = 0
            for pid in self._tree(self.roots()):
                rss, cmd = _rss_kb(pid), _cmdline(pid)
                if rss is None:
                    continue
                total += rss
                self.peak[pid] = max(self.peak.get(pid, 0), rss)
                if self.role.get(pid, "other") == "other":  # bash exec's java in the same pid
                    self.role[pid] = _role(cmd)
            self.peak_sum = max(self.peak_sum, total)
            self.done.wait(self.period)

    @staticmethod
    def _tree(roots) -> list[int]:
        children = {}
        for d in pathlib.Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(d.name))
        out, todo = set(), list(roots)
        while todo:
            p = todo.pop()
            if p not in out:  # a root may be another root's child
                out.add(p)
                todo += children.get(p, [])
        return sorted(out)

    def by_role(self) -> dict:
        """{role: [peak RSS in MB per process]}."""
        out = {}
        for pid, kb in self.peak.items():
            if self.role[pid] != "other":
                out.setdefault(self.role[pid], []).append(round(kb / 1024))
        return {k: sorted(v) for k, v in out.items()}


def _rss_kb(pid: int):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        return ""


def _role(cmd: str) -> str:
    argv = cmd.split("\0")
    # spark-class's bash and its launcher (org.apache.spark.launcher.Main) are not the daemon
    if os.path.basename(argv[0]) != "java" or "org.apache.spark.launcher.Main" in argv:
        return "other"
    for needle, role in (("CoarseGrainedExecutorBackend", "executor"),
                         (vspark.WORKER_CLASS, "worker"), (vspark.MASTER_CLASS, "master"),
                         ("org.apache.spark.deploy.SparkSubmit", "driver")):
        if needle in cmd:
            return role
    return "other"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor-memory", default="2g", help="JVM heap of each executor")
    ap.add_argument("--driver-memory", default="1g")
    ap.add_argument("--shuffle-partitions", type=int,
                    help="spark.sql.shuffle.partitions (default Spark's 200, coalesced by "
                         "adaptive execution)")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    worker_memory = f"{int(args.executor_memory[:-1]) + 1}{args.executor_memory[-1]}"
    t0 = time.monotonic()
    cluster = vspark.StandaloneCluster(workers=args.workers, cores=1, memory=worker_memory)
    sampler = RssSampler(lambda: [p.pid for p in cluster.procs] + [os.getpid()])
    sampler.start()
    spark = None
    try:
        cluster.start()
        started = time.monotonic() - t0
        t = time.monotonic()
        spark = vspark.session(
            cluster.url, app="vprof-fleet-bench", executor_memory=args.executor_memory,
            driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions,
            conf={"spark.executor.processTreeMetrics.enabled": "true",
                  "spark.executor.metrics.pollingInterval": "200ms",
                  "spark.executor.heartbeatInterval": "1s"})
        session_s = time.monotonic() - t
        t = time.monotonic()
        vspark.bind(spark, args.paths)
        seconds, rows, out = {"bind": round(time.monotonic() - t, 3)}, {}, {}
        for q in QUERIES:
            t = time.monotonic()
            out[q] = vspark.run_query(spark, q)
            seconds[q] = round(time.monotonic() - t, 3)
            rows[q] = len(out[q])
        queries_s = sum(seconds[q] for q in QUERIES)
        n_rows = spark.sql("SELECT COUNT(*) AS n FROM node_times").collect()[0]["n"]
        time.sleep(2.5)  # the executors' last heartbeat carries their peak metrics
        heap = {}
        for e in vspark.executors(spark):
            peak = e.get("peakMemoryMetrics") or {}
            heap[e["id"]] = {"peak_heap_mb": round(peak.get("JVMHeapMemory", 0) / 2**20),
                             "peak_rss_mb": round(peak.get("ProcessTreeJVMRSSMemory", 0) / 2**20),
                             "tasks": e["totalTasks"]}
    finally:
        if spark is not None:
            spark.stop()
        sampler.done.set()
        sampler.join()
        cluster.stop()
    print(json.dumps({
        "workers": args.workers, "executor_memory": args.executor_memory,
        "shuffle_partitions": args.shuffle_partitions or 200, "node_times_rows": n_rows,
        "cluster_start_s": round(started, 3), "session_s": round(session_s, 3),
        "seconds": seconds, "queries_s": round(queries_s, 3),
        "total_s": round(time.monotonic() - t0, 3), "result_rows": rows,
        "peak_rss_mb": sampler.by_role(), "peak_rss_sum_mb": round(sampler.peak_sum / 1024),
        "executors_rest": heap,
        "groups": [{"label": r["label"], "intervals": r["intervals"], "var_ns2": r["var_ns2"]}
                   for r in out["latency"]]}))


if __name__ == "__main__":
    main()
