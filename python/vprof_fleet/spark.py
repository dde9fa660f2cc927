"""The decomposition on Spark SQL: binds the tables `intervals` and `node_times` to Parquet
files as temporary views (the only Spark-specific part) and runs the standard SQL of
sql/*.sql on them; plus a Spark standalone cluster of local processes (a master and workers,
pyspark's own jars and Debian's OpenJDK 17) for the tests and the benchmark. docs/fleet.md.

    with StandaloneCluster(workers=2) as cluster:
        spark = session(cluster.url)
        rows = decompose(["fleet/"], spark)

pyspark is imported by the functions that need it, so that StandaloneCluster runs under any
Python that can find pyspark's folder (spark_home)."""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from .duck import parquet_files
from .sql import QUERIES, query_text

# the daemons' and the driver's web UIs are local: never through an http_proxy of the environment
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> pathlib.Path:
    """pyspark's folder, which holds bin/spark-class and the jars ($SPARK_HOME when set).
    Raises RuntimeError naming the fix when pyspark is not installed."""
    if os.environ.get("SPARK_HOME"):
        return pathlib.Path(os.environ["SPARK_HOME"])
    try:
        import pyspark
    except ImportError as e:
        raise RuntimeError(f"{e}: pyspark is not in this Python; run `bash cmake/install-venv.sh"
                           " --spark` in the vprof source tree") from e
    return pathlib.Path(pyspark.__file__).resolve().parent


def java() -> str:
    """The java launcher the cluster uses ($JAVA_HOME/bin/java, else java on PATH). Raises
    RuntimeError naming the fix when there is none."""
    if os.environ.get("JAVA_HOME"):
        j = pathlib.Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if j.exists():
            return str(j)
        raise RuntimeError(f"JAVA_HOME={os.environ['JAVA_HOME']}: no bin/java there")
    j = shutil.which("java")
    if not j:
        raise RuntimeError("no java on PATH: Spark needs a Java 17 runtime; run `bash "
                           "cmake/install-deps.sh` (Debian's openjdk-17-jre-headless)")
    return j


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the kernel's pick; another process may take it
    before the caller binds it, which StandaloneCluster reports as a start-up failure)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone cluster of local processes: one master and `workers` workers,
    each launched by pyspark's bin/spark-class in a process group of its own (the workers'
    executors are their children, in the same group), on free ports of `host`.

    start() returns when the master lists every worker ALIVE (or raises RuntimeError with the
    logs' last lines); stop() kills every process group (SIGTERM, SIGKILL after `grace`
    seconds) and removes the scratch folder: call it in a finally, a fixture's finalizer or
    use the cluster as a context manager. Costs 5-15 s of start-up on 2 cores and `daemon_memory`
    of JVM heap per daemon; each worker offers `cores` cores and `memory` to executors."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g",
                 daemon_memory: str = "256m", host: str = "127.0.0.1", scratch=None,
                 timeout: float = 120.0, grace: float = 10.0):
        self.workers, self.cores, self.memory = workers, cores, memory
        self.daemon_memory, self.host = daemon_memory, host
        self.timeout, self.grace = timeout, grace
        self._own_scratch = scratch is None
        self.scratch = pathlib.Path(scratch or tempfile.mkdtemp(prefix="vprof-spark-"))
        self.procs: list[subprocess.Popen] = []
        self.url = self.ui = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

    def _env(self) -> dict:
        home, runner = spark_home(), java()
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_DAEMON_MEMORY": self.daemon_memory,
               # an empty conf folder: no spark-defaults.conf or spark-env.sh of the user's
               "SPARK_CONF_DIR": str(self.scratch / "conf"),
               "SPARK_LOG_DIR": str(self.scratch / "logs"),
               "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
               "SPARK_WORKER_DIR": str(self.scratch / "work"),
               "SPARK_LOCAL_IP": self.host, "SPARK_NO_DAEMONIZE": "1"}
        if not os.environ.get("JAVA_HOME"):  # spark-class's java, the one found here
            env["JAVA_HOME"] = str(pathlib.Path(os.path.realpath(runner)).parent.parent)
        for d in ("conf", "logs", "local", "work"):
            (self.scratch / d).mkdir(parents=True, exist_ok=True)
        return env

    def _launch(self, name: str, args: list[str], env: dict) -> subprocess.Popen:
        log = open(self.scratch / "logs" / f"{name}.out", "wb")
        try:
            p = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env,
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        finally:
            log.close()
        p.name = name
        self.procs.append(p)
        return p

    def state(self) -> dict:
        """The master's JSON status (its web UI's /json: url, workers, activeapps...)."""
        with _LOCAL.open(f"{self.ui}/json/", timeout=5) as r:
            return json.load(r)

    def start(self) -> "StandaloneCluster":
        env = self._env()
        port, ui = free_port(self.host), free_port(self.host)
        self.ui = f"http://{self.host}:{ui}"
        self._launch("master", [MASTER_CLASS, "--host", self.host, "--port", str(port),
                                "--webui-port", str(ui)], env)
        self.url = self._wait(lambda s: s.get("status") == "ALIVE" and s["url"], "the master")
        for i in range(self.workers):
            self._launch(f"worker-{i + 1}", [
                WORKER_CLASS, self.url, "--host", self.host, "--cores", str(self.cores),
                "--memory", self.memory, "--webui-port", str(free_port(self.host)),
                "--work-dir", str(self.scratch / "work")], env)
        self._wait(lambda s: sum(w["state"] == "ALIVE" for w in s["workers"]) >= self.workers,
                   f"{self.workers} workers")
        return self

    def _wait(self, ready, what: str):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"Spark {dead[0].name} exited with {dead[0].returncode} "
                                   f"while waiting for {what}:\n{self.log_tail()}")
            try:
                got = ready(self.state())
                if got:
                    return got
            except (OSError, ValueError, KeyError):
                pass  # the web UI is not up yet
            time.sleep(0.2)
        raise RuntimeError(f"Spark: no {what} after {self.timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for f in sorted((self.scratch / "logs").glob("*.out")):
            tail = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {f.name}\n" + "\n".join(tail))
        return "\n".join(out)

    def pids(self) -> list[int]:
        """Every live process of the cluster: the daemons and their children (executors)."""
        return group_pids({p.pid for p in self.procs})

    def stop(self) -> None:
        """Kills every process group (idempotent), waits until none of their processes is left
        (at most `grace` seconds more) and removes the scratch folder if it made it."""
        groups = {p.pid for p in self.procs}
        for sig in (signal.SIGTERM, signal.SIGKILL):
            live = [p for p in self.procs if p.poll() is None]
            for p in live:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + self.grace
            for p in live:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        # an executor whose worker exited first is still in the group: SIGKILL the groups again
        # and wait for the kernel to take the processes away
        deadline = time.monotonic() + self.grace
        while group_pids(groups) and time.monotonic() < deadline:
            for g in groups:
                try:
                    os.killpg(g, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        self.procs = []
        if self._own_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


def group_pids(groups) -> list[int]:
    """The processes of the process groups `groups` that are not zombies (a zombie holds no
    memory or port; its parent reaps it)."""
    found = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp ...
        if fields[0] != "Z" and int(fields[2]) in groups:
            found.append(int(d.name))
    return found


# The JVM's own warnings (unified logging: "[140.389s][warning][gc,alloc] … Retried waiting
# for GCLocker too often") go to stdout by default, and the driver's JVM shares this
# Python's stdout, where a caller may be writing data (JSON): they go to stderr instead.
# -Xlog:disable clears the default stdout output before the stderr one is added.
DRIVER_JAVA_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr:uptime,level,tags"


def session(master: str, app: str = "vprof-fleet", executor_memory: str = "512m",
            executor_cores: int = 1, driver_memory: str = "512m",
            shuffle_partitions: int | None = None, conf: dict | None = None):
    """A SparkSession connected to `master` (spark://host:port, or local[N]). The driver's
    JVM is a child of this Python (pyspark's gateway). shuffle_partitions defaults to
    Spark's 200, which adaptive execution coalesces; small inputs run faster with a few.
    A master on the loopback address gets a driver bound there too (else the driver takes
    the host name's address, which executors on 127.0.0.1 may not be meant to reach). The
    driver JVM's warnings go to stderr (DRIVER_JAVA_OPTIONS; `conf` may override)."""
    from pyspark.sql import SparkSession
    b = SparkSession.builder.master(master).appName(app)
    host = urllib.parse.urlsplit(master).hostname if master.startswith("spark://") else None
    if master.startswith("local") or host in ("127.0.0.1", "localhost"):
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress",
                                                               "127.0.0.1")
        # read by the driver's JVM before any conf: no warning about the host's address
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    b = (b
         .config("spark.executor.memory", executor_memory)
         .config("spark.executor.cores", str(executor_cores))
         .config("spark.driver.memory", driver_memory)
         .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
         .config("spark.ui.showConsoleProgress", "false"))
    if shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for k, v in (conf or {}).items():
        b = b.config(k, str(v))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def bind(spark, paths) -> None:
    """The temporary views intervals and node_times over the Parquet files under `paths`
    (folders searched recursively, as duck.parquet_files). The SQL form of the same, for one
    glob per table: CREATE TEMPORARY VIEW intervals USING parquet OPTIONS (path '...')."""
    for table in ("intervals", "node_times"):
        files = [pathlib.Path(f).resolve().as_uri() for f in parquet_files(paths, table)]
        spark.read.parquet(*files).createOrReplaceTempView(table)


def run_query(spark, name: str) -> list[dict]:
    return [r.asDict() for r in spark.sql(query_text(name)).collect()]


def decompose(paths, spark, queries=tuple(QUERIES)) -> dict:
    """{query name: rows as dicts} of the decomposition over the Parquet files under `paths`,
    run by the SparkSession `spark` (its temporary views intervals and node_times are
    replaced)."""
    bind(spark, paths)
    return {q: run_query(spark, q) for q in queries}


def executors(spark) -> list[dict]:
    """The application's executors as the driver's REST API lists them (id, hostPort,
    totalTasks, memoryMetrics, peakMemoryMetrics...), live and dead, the driver left out."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/allexecutors"
    with _LOCAL.open(url, timeout=10) as r:
        return [e for e in json.load(r) if e["id"] != "driver"]
