#!/usr/bin/env python3
"""The clients beside memcaslap in the memcached workload (ASCII protocol, one connection
each, standard library only):
    mcclient.py PORT slow SECONDS [--keys 300] [--size 1024] [--every 0.01]
        a client whose command is slow: preloads KEYS values, then sends one multi-get of
        all of them every EVERY seconds (head-of-line blocking on the worker that serves it)
    mcclient.py PORT stats SECONDS [--every 0.001]
        a monitoring agent polling `stats slabs` and `stats items` (both walk every slab
        class under the slabs lock / the LRU locks the workers take for every store)
    mcclient.py PORT dump SECONDS [--every 0.01]
        a monitoring agent dumping the keys of the busiest slab class (`stats cachedump
        CLASS 0`: up to 2 MiB of key lines, walked under that class's COLD LRU lock, which
        every store that evicts from the class takes)
    mcclient.py PORT probe SECONDS [--every 0.0005]
        the latency probe: one `get` of a preloaded key at a time, timed on the client;
        prints `probe: N gets, p50 X us, p99 Y us, max Z us` (memcaslap prints no
        percentiles, only its throughput)
    mcclient.py PORT usage 0
        the server's own account at the end of a run (`stats`): its CPU time (user +
        system, every thread) per command served; prints `usage: N commands, cpu X s,
        Y us per command` — a steadier measure of what probes cost than the throughput of
        a client sharing the same two cores
Each prints one summary line on standard output."""
import argparse
import socket
import sys
import time


def connect(port: int) -> socket.socket:
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            time.sleep(0.05)
    sys.exit(f"mcclient.py: no memcached on port {port}")


def read_until(s: socket.socket, buf: bytearray, end: bytes) -> bytes:
    while not buf.endswith(end):
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("mcclient.py: the server closed the connection")
        buf += chunk
    out = bytes(buf)
    buf.clear()
    return out


def preload(s: socket.socket, prefix: str, n: int, size: int) -> list:
    keys = [f"{prefix}{i}" for i in range(n)]
    value = b"v" * size
    buf = bytearray()
    for k in keys:
        s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k.encode(), size, value))
        read_until(s, buf, b"\r\n")
    return keys


def slow(s, seconds, a) -> str:
    keys = preload(s, "slow:", a.keys, a.size)
    cmd = ("get " + " ".join(keys) + "\r\n").encode()
    buf, n, t_end = bytearray(), 0, time.monotonic() + seconds
    while time.monotonic() < t_end:
        s.sendall(cmd)
        read_until(s, buf, b"END\r\n")
        n += 1
        time.sleep(a.every)
    return f"slow: {n} multi-gets of {a.keys} keys x {a.size} B"


def stats(s, seconds, a) -> str:
    buf, n, t_end = bytearray(), 0, time.monotonic() + seconds
    while time.monotonic() < t_end:
        for cmd in (b"stats slabs\r\n", b"stats items\r\n"):
            s.sendall(cmd)
            read_until(s, buf, b"END\r\n")
        n += 1
        time.sleep(a.every)
    return f"stats: {n} polls"


def busiest_class(s, buf: bytearray) -> int:
    """The slab class holding the most items (`stats items`), 1 while none holds any."""
    s.sendall(b"stats items\r\n")
    counts = {}
    for line in read_until(s, buf, b"END\r\n").decode().splitlines():
        parts = line.split()  # STAT items:<class>:number <n>
        if len(parts) == 3 and parts[1].startswith("items:") and parts[1].endswith(":number"):
            counts[int(parts[1].split(":")[1])] = int(parts[2])
    return max(counts, key=counts.get) if counts else 1


def dump(s, seconds, a) -> str:
    buf, n, lines, t_end = bytearray(), 0, 0, time.monotonic() + seconds
    time.sleep(min(0.5, seconds / 4))  # let the load fill the cache first
    cls = busiest_class(s, buf)
    while time.monotonic() < t_end:
        s.sendall(b"stats cachedump %d 0\r\n" % cls)
        lines += read_until(s, buf, b"END\r\n").count(b"\n") - 1
        n += 1
        time.sleep(a.every)
    return f"dump: {n} dumps of class {cls}, {lines // max(n, 1)} keys each"


def probe(s, seconds, a) -> str:
    keys = preload(s, "probe:", 100, 100)
    buf, lat, t_end = bytearray(), [], time.monotonic() + seconds
    i = 0
    while time.monotonic() < t_end:
        cmd = b"get %s\r\n" % keys[i % len(keys)].encode()
        t0 = time.perf_counter_ns()
        s.sendall(cmd)
        read_until(s, buf, b"END\r\n")
        lat.append((time.perf_counter_ns() - t0) / 1000)
        i += 1
        time.sleep(a.every)
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    return f"probe: {len(lat)} gets, p50 {q(0.5):.1f} us, p99 {q(0.99):.1f} us, max {lat[-1]:.1f} us"


def usage(s, seconds, a) -> str:
    buf = bytearray()
    s.sendall(b"stats\r\n")
    stat = {}
    for line in read_until(s, buf, b"END\r\n").decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            stat[parts[1]] = parts[2]
    commands = sum(int(stat[k]) for k in ("cmd_get", "cmd_set", "cmd_touch", "cmd_flush"))
    cpu = float(stat["rusage_user"]) + float(stat["rusage_system"])
    return (f"usage: {commands} commands, cpu {cpu:.3f} s, "
            f"{1e6 * cpu / max(commands, 1):.3f} us per command")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("port", type=int)
    ap.add_argument("mode", choices=["slow", "stats", "dump", "probe", "usage"])
    ap.add_argument("seconds", type=float)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--every", type=float, default=None)
    a = ap.parse_args()
    if a.every is None:
        a.every = {"slow": 0.01, "stats": 0.001, "dump": 0.01, "probe": 0.0005,
                   "usage": 0}[a.mode]
    s = connect(a.port)
    modes = {"slow": slow, "stats": stats, "dump": dump, "probe": probe, "usage": usage}
    print(modes[a.mode](s, a.seconds, a), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
