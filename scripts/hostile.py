#!/usr/bin/env python3
"""Hostile clients against assetd, measured: scripts/hostile.sh [--assetd PATH] [--scale F] [CASE...]

Each case starts a fresh assetd (its own config, root, database and socket in a temp folder),
runs hostile clients against it while one bystander pings every 20 ms and another runs ordinary
methods, and prints the daemon's RSS (peak while the clients run, and after they left and the
daemon settled) and the bystanders' p99 against the targets of docs/PERFORMANCE.md:
RSS <= 100 MiB after one client's work, <= 300 MiB with four hostile clients at once, back near
idle when they leave; ping p99 <= 100 ms throughout.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Client:
    def __init__(self, path, timeout=120):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.next = 1

    def send(self, method, params=None, id=None):
        if id is None:
            id = self.next
            self.next += 1
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall(json.dumps(msg).encode() + b"\n")

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None):
        self.send(method, params)
        while True:
            r = self.line()
            if "id" in r:
                if "error" in r:
                    raise RuntimeError(r["error"])
                return r["result"]

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Daemon:
    def __init__(self, assetd, control=""):
        self.dir = tempfile.mkdtemp(prefix="assetd-hostile-")
        self.root = self.dir + "/root"
        os.makedirs(self.root)
        os.makedirs(self.dir + "/run")
        self.socket = self.dir + "/run/control.sock"
        config = f"""
[store]
path = "{self.dir}/state/assetd.sqlite"
durability = "normal"
[control]
socket = "{self.socket}"
{control}
[files]
roots = ["{self.root}"]
[log]
level = "warning"
"""
        with open(self.dir + "/assetd.toml", "w") as f:
            f.write(config)
        self.log = open(self.dir + "/assetd.log", "w")
        self.p = subprocess.Popen([assetd, "--config", self.dir + "/assetd.toml"], stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = Client(self.socket, 2)
                c.call("ping")
                c.close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("assetd did not start: " + open(self.dir + "/assetd.log").read())

    def stop(self, failed=False):
        self.p.terminate()
        try:
            self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()
        if failed:
            # The log goes with the folder: show what assetd said before it does.
            with open(self.dir + "/assetd.log", errors="replace") as f:
                tail = f.readlines()[-50:]
            print(f"assetd's log (the last {len(tail)} lines):", file=sys.stderr)
            sys.stderr.writelines(tail)
        shutil.rmtree(self.dir, ignore_errors=True)


class Watch:
    """Samples RSS every 20 ms; a bystander pings every 20 ms, another runs ordinary methods."""

    def __init__(self, d):
        self.d = d
        self.stop = threading.Event()
        self.peak = 0
        self.pings = []
        self.others = []
        self.errors = []
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self.sample, self.ping, self.work)]
        for t in self.threads:
            t.start()

    def sample(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss(self.d.p.pid))
            time.sleep(0.02)

    def ping(self):
        c = Client(self.d.socket)
        while not self.stop.is_set():
            t = time.monotonic()
            c.call("ping")
            self.pings.append(time.monotonic() - t)
            time.sleep(0.02)
        c.close()

    def work(self):
        c = Client(self.d.socket)
        i = 0
        while not self.stop.is_set():
            i += 1
            ops = [
                ("object.put", {"collection": "by", "key": f"k{i}", "value": {"n": i}}),
                ("object.touch", {"collection": "by", "key": f"k{i}"}),
                ("stats", None),
                ("object.delete", {"collection": "by", "key": f"k{i}"}),
                ("pending", None),
            ]
            for m, p in ops:
                t = time.monotonic()
                try:
                    c.call(m, p)
                except RuntimeError as e:
                    self.errors.append(f"{m}: {e}")
                self.others.append(time.monotonic() - t)
            time.sleep(0.02)
        c.close()

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join(120)


def p99(xs):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def idle_rss(d):
    time.sleep(1)
    return rss(d.p.pid)


def settle(d, before):
    """RSS once the clients left: sampled for a few seconds, the last value."""
    deadline = time.time() + 5
    value = rss(d.p.pid)
    while time.time() < deadline:
        time.sleep(0.5)
        value = rss(d.p.pid)
        if value <= before + 20 * MIB:
            break
    return value


def fill(d, n, size, collection="big"):
    c = Client(d.socket)
    blob = "x" * size
    for i in range(n):
        c.call("object.put", {"collection": collection, "key": f"k{i}", "value": blob})
    c.close()


def flood(path, lines, sent):
    """Sends `lines` without reading anything; stops when the daemon closes or the case ends."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        sent.append(s)
        for chunk in lines:
            s.sendall(chunk)
    except OSError:
        pass


SLOW_CLAUSE = ("WHERE key IN (SELECT a.key FROM index_default a, index_default b, index_default c, index_default d, "
               "index_default e WHERE a.key || b.key || c.key || d.key || e.key = 'never')")


def request(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n"


def case_slow_queries(d, scale):
    fill(d, 40, 10, "q")
    socks = []
    line = request("index.query", {"where": SLOW_CLAUSE})
    threads = [threading.Thread(target=flood, args=(d.socket, [line], socks)) for _ in range(4)]
    return threads, socks, 6.0


def case_transacts(d, scale):
    def run():
        c = Client(d.socket)
        blob = "t" * 2048
        for t in range(int(3000 * scale)):
            ops = [{"method": "object.put", "params": {"collection": "tx", "key": f"{t}-{j}", "value": blob}} for j in range(50)]
            c.call("transact", {"ops": ops})
        c.close()
    return [threading.Thread(target=run)], [], None


def case_big_puts(d, scale):
    def run():
        c = Client(d.socket)
        blob = "p" * 400_000
        for i in range(int(1000 * scale)):
            c.call("object.put", {"collection": "bp", "key": f"k{i}", "value": blob})
        c.close()
    return [threading.Thread(target=run)], [], None


def put_lines(prefix, n, size):
    blob = "m" * size
    for i in range(n):
        yield json.dumps({"jsonrpc": "2.0", "id": i, "method": "object.put",
                          "params": {"collection": prefix, "key": f"k{i}", "value": blob}}).encode() + b"\n"


def case_pipelined_puts(d, scale):
    socks = []
    threads = [threading.Thread(target=flood, args=(d.socket, put_lines(f"pp{i}", int(700 * scale), 1_000_000), socks))
               for i in range(2)]
    return threads, socks, 8.0


def number_puts(d, scale, size):
    """128 clients, each putting `[0,0,…]` of `size` bytes and reading its answer, twice."""
    line = (b'{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"np","key":"k%d","value":['
            + b",".join([b"0"] * (size // 2)) + b"]}}\n")

    def run(i):
        try:
            c = Client(d.socket)
            for _ in range(max(1, int(2 * scale))):
                c.s.sendall(line.replace(b"k%d", b"k%d" % i, 1))
                c.line()
            c.close()
        except (OSError, EOFError):
            pass
    return [threading.Thread(target=run, args=(i,)) for i in range(128)], [], None


def number_lines(d, scale):
    """128 clients, each sending 64 puts of `[0,0,…]` in lines just over 1 KiB (1,059-1,063
    bytes: weighed and gated, none parsed ahead) at once and reading the answers, twice: all
    but the first wait for its group commit."""
    def line(i, j):
        return (b'{"jsonrpc":"2.0","id":%d,"method":"object.put","params":{"collection":"nl","key":"k%d-%d","value":['
                % (j, i, j) + b",".join([b"0"] * 480) + b"]}}\n")

    def run(i):
        try:
            c = Client(d.socket)
            for _ in range(max(1, int(2 * scale))):
                c.s.sendall(b"".join(line(i, j) for j in range(64)))
                for _ in range(64):
                    c.line()
            c.close()
        except (OSError, EOFError):
            pass
    return [threading.Thread(target=run, args=(i,)) for i in range(128)], [], None


def case_big_replies(d, scale):
    fill(d, int(300 * scale), 900_000)
    socks = []
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "index.query",
                       "params": {"where": "", "include": "objects"}}).encode() + b"\n"
    threads = [threading.Thread(target=flood, args=(d.socket, [line] * 4, socks)) for _ in range(4)]
    return threads, socks, 8.0


def case_printf(d, scale):
    fill(d, 1, 10, "one")
    socks = []
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "index.aggregate",
                       "params": {"function": "printf('%.*c', 60000000, 'x')"}}).encode() + b"\n"
    threads = [threading.Thread(target=flood, args=(d.socket, [line] * 2, socks)) for _ in range(12)]
    return threads, socks, 10.0


def case_four_at_once(d, scale):
    fill(d, 40, 10, "q")
    fill(d, int(100 * scale), 900_000)
    shared = []
    big = request("index.query", {"where": "", "include": "objects"})
    printf = request("index.aggregate", {"function": "printf('%.*c', 60000000, 'x')"})
    threads = [
        threading.Thread(target=flood, args=(d.socket, [request("index.query", {"where": SLOW_CLAUSE})], shared)),
        threading.Thread(target=flood, args=(d.socket, put_lines("four", int(700 * scale), 1_000_000), shared)),
        threading.Thread(target=flood, args=(d.socket, [big] * 4, shared)),
        threading.Thread(target=flood, args=(d.socket, [printf] * 4, shared)),
    ]
    return threads, shared, 10.0


CASES = {
    "slow-queries": (case_slow_queries, "4 clients, index.query to the time limit", 100, 'query_time_limit = "5s"'),
    "transacts": (case_transacts, "1 client, 3,000 transacts of 50 x 2 KB puts, reading", 100, ""),
    "big-puts": (case_big_puts, "1 client, 1,000 puts of 400 KB, reading", 100, ""),
    "pipelined-puts": (case_pipelined_puts, "2 clients pipelining 1 MB puts, not reading", 100, ""),
    "number-puts": (lambda d, scale: number_puts(d, scale, 1_000_000),
                    "128 clients, 2 puts each of [0,0,...] in 1 MB, reading", 300, ""),
    "number-puts-300k": (lambda d, scale: number_puts(d, scale, 300_000),
                         "128 clients, 2 puts each of [0,0,...] in 300 KB, reading", 300, ""),
    "number-lines": (number_lines, "128 clients, 64 puts each of [0,0,...] in 1.06 KB lines at once, reading, twice",
                     300, ""),
    "big-replies": (case_big_replies, "4 clients, index.query objects over 300 x 900 KB, not reading", 300, ""),
    "printf": (case_printf, "12 clients, printf('%.*c', 60000000, 'x'), not reading", 300, ""),
    "four-at-once": (case_four_at_once, "a slow query, a pipeliner, a big reply and a printf at once", 300,
                     'query_time_limit = "5s"'),
}


def run_case(name, assetd, scale):
    make, what, target, control = CASES[name]
    d = Daemon(assetd, control)
    failed = True  # until the case has printed its figures
    try:
        idle = idle_rss(d)
        threads, socks, hold = make(d, scale)
        w = Watch(d)
        for t in threads:
            t.start()
        if hold is None:
            for t in threads:
                t.join()
        else:
            # Non-reading clients: keep them connected for `hold` seconds, then leave.
            time.sleep(hold)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        for t in threads:
            t.join(60)
        after = settle(d, idle)
        c = Client(d.socket)
        st = c.call("stats")
        c.close()
        left = f"connections {st.get('connections')}, buffers {st.get('buffers')}, queries {st.get('queries')}"
        w.end()
        ping = p99(w.pings) * 1000
        other = p99(w.others) * 1000
        ok_rss = w.peak <= target * MIB
        ok_ping = ping <= 100
        print(f"{name:15} {what}")
        print(f"  rss idle {idle / MIB:6.1f} MiB  peak {w.peak / MIB:7.1f} MiB (target <= {target})  "
              f"after {after / MIB:6.1f} MiB  {'MET' if ok_rss else 'MISSED'}")
        print(f"  ping p99 {ping:7.1f} ms over {len(w.pings)} (target <= 100)  {'MET' if ok_ping else 'MISSED'};  "
              f"other methods p99 {other:7.1f} ms over {len(w.others)}")
        print(f"  after: {left}")
        if w.errors:
            print(f"  bystander errors: {len(w.errors)}, first: {w.errors[0]}")
        sys.stdout.flush()
        failed = False
        return ok_rss and ok_ping
    finally:
        d.stop(failed=failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--assetd", default=os.environ.get("ASSETD", ".build/debug/assetd"))
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each case's volume (default 1)")
    ap.add_argument("cases", nargs="*", default=list(CASES), help=", ".join(CASES))
    a = ap.parse_args()
    for c in a.cases:
        if c not in CASES:
            ap.error(f"unknown case {c}")
    met = all([run_case(c, a.assetd, a.scale) for c in a.cases])
    print("all targets MET" if met else "some targets MISSED")
    # 3, not 1: Python exits 1 on an uncaught exception (a crashed assetd, a broken case), and
    # scripts/bench.sh must tell a miss, which it reports, from a run that failed.
    return 0 if met else 3


if __name__ == "__main__":
    sys.exit(main())
