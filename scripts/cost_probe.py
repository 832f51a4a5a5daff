#!/usr/bin/env python3
"""Instructions a request on the daemon's threads, for the hot paths of the 0.17 round's lanes:
scripts/cost_probe.py ASSETD WORKLOAD [--callgrind OUT] [--ownership] [--as-uid UID] [--n N] …

Starts ASSETD in a temp folder (under `valgrind --tool=callgrind --separate-threads=yes` with
--callgrind, its profile in OUT.*), sets up the workload without counting, zeroes the counters
(`callgrind_control -z`), runs the measured requests and dumps (`callgrind_control -d`); then
prints each thread's instructions a request and its top functions. Give callgrind a `strip
--strip-debug` copy of a release binary (valgrind 3.19 cannot read Swift's DWARF 5).
Without --callgrind it prints the daemon's CPU time a request instead (utime + stime).

Workloads (measured requests in brackets):
  puts       --objects K (20000) --n N (3000) --uids U: K objects put first, then 500 durable
             puts from 25 connections to warm up, [N new puts from 25 connections]; with
             --uids, the connections are spread over U uids (2001 on; needs root), one client
             process each, all at once, each with its share of the puts
  held       --files F (10) --depth D (1) --objects M (10) --n N (20): M objects each holding
             F files D components below the root through manual edges (`edge.add`), then a put
             of each to warm up, [N puts of each with its value unchanged, one connection
             per object]
  delete     --inbound E (0) --rules R ("") --objects M (100): M objects each the destination
             of E edges from E objects of its owner, rules R (comma-separated), one more
             deleted to warm up, then [a delete of each, 10 connections]
  pipeline   --method ping|get --n N (20): one connection, [N writes of 64 KiB of requests
             each, all answers read before the next write]
  pool       --method pending|query --n N (500): [N requests one after another on one
             connection], methods that run on the pool
  verify     --objects K (2000) --replaced yes|no (no): K objects each holding a 1-byte file
             of its own in a folder of the client's; with --replaced, each file then written
             anew and renamed over its name (another inode: identity_changed, or with
             --ownership a claim's look), [one verify]; "a request" is a file
--ownership sets control.enforce_ownership; --as-uid runs the clients as that uid (root, an
admin, by default; needs root), whose user name owns what they put. COST_PROBE_KEEP=FILE keeps
a copy of the database.
"""

import json
import os
import pwd
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def parse(argv):
    opts = {"callgrind": None, "ownership": False, "as-uid": None}
    opts["binary"], opts["workload"] = argv[0], argv[1]
    rest = argv[2:]
    while rest:
        flag = rest.pop(0)[2:]
        if flag == "ownership":
            opts[flag] = True
        else:
            opts[flag] = rest.pop(0)
    return opts


class Daemon:
    def __init__(self, binary, ownership, callgrind):
        self.dir = tempfile.mkdtemp(prefix="cost-probe-")
        os.chmod(self.dir, 0o755)
        self.root = self.dir + "/root"
        os.makedirs(self.root)
        os.chmod(self.root, 0o777)
        self.sock = self.dir + "/control.sock"
        with open(self.dir + "/assetd.toml", "w") as f:
            f.write(
                f'[store]\npath = "{self.dir}/assetd.sqlite"\naccess_flush = "1h"\n'
                f'[control]\nsocket = "{self.sock}"\nmode = "0666"\n'
                f"enforce_ownership = {'true' if ownership else 'false'}\n"
                f'[files]\nroots = ["{self.root}"]\n[log]\nlevel = "warning"\n'
            )
        self.log = open(self.dir + "/log", "w")
        command = [binary, "--config", self.dir + "/assetd.toml"]
        self.callgrind = callgrind
        if callgrind:
            command = [
                "valgrind", "--tool=callgrind", "--separate-threads=yes",
                "--callgrind-out-file=" + callgrind,
            ] + command
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log)
        for _ in range(1200):
            try:
                c = connect(self.sock)
                call(c, "ping")
                c.close()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("the daemon did not answer")

    def cpu(self):
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def zero(self):
        if self.callgrind:
            subprocess.run(["callgrind_control", "-z", str(self.process.pid)], check=True,
                           stdout=subprocess.DEVNULL)
        self.cpu0 = self.cpu()

    def dump(self):
        self.cpu1 = self.cpu()
        if self.callgrind:
            subprocess.run(["callgrind_control", "-d", str(self.process.pid)], check=True,
                           stdout=subprocess.DEVNULL)

    def stop(self):
        c = connect(self.sock)
        call(c, "shutdown")
        self.process.wait(timeout=600)
        if os.environ.get("COST_PROBE_KEEP"):
            shutil.copy(self.dir + "/assetd.sqlite", os.environ["COST_PROBE_KEEP"])
        shutil.rmtree(self.dir, ignore_errors=True)


def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s


def call(s, method, params=None):
    request = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        request["params"] = params
    s.sendall((json.dumps(request) + "\n").encode())
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise OSError("closed")
        reply += chunk
    answer = json.loads(reply)
    if "error" in answer:
        raise SystemExit(f"{method} {params}: {answer['error']}")
    return answer["result"]


def line(method, params=None):
    request = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        request["params"] = params
    return (json.dumps(request) + "\n").encode()


def closed_loop(sock, lines, connections):
    """Sends `lines` over `connections` connections, one in flight each; every answer checked."""
    sel = selectors.DefaultSelector()
    pending = list(reversed(lines))
    conns = [connect(sock) for _ in range(min(connections, len(lines)))]
    buffers = {}
    for c in conns:
        c.sendall(pending.pop())
        buffers[c] = b""
        sel.register(c, selectors.EVENT_READ)
    open_ = len(conns)
    while open_:
        for key, _ in sel.select():
            c = key.fileobj
            buffers[c] += c.recv(1 << 20)
            if buffers[c].endswith(b"\n"):
                answer = json.loads(buffers[c])
                if "error" in answer:
                    raise SystemExit(f"error: {answer['error']}")
                buffers[c] = b""
                if pending:
                    c.sendall(pending.pop())
                else:
                    sel.unregister(c)
                    c.close()
                    open_ -= 1


def as_client(uid, body):
    """Runs `body` in a child process as `uid` (None: this process's own)."""
    if uid is None:
        body()
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            body()
            os._exit(0)
        except BaseException as e:  # noqa: BLE001 - report and fail the child
            print(f"client: {e}", file=sys.stderr)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit("the client failed")


def as_clients(uids, body):
    """Runs `body(k)` in a child process as each of `uids` (k its index), all at once."""
    pids = []
    for k, uid in enumerate(uids):
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                body(k)
                os._exit(0)
            except BaseException as e:  # noqa: BLE001 - report and fail the child
                print(f"client {uid}: {e}", file=sys.stderr)
                os._exit(1)
        pids.append(pid)
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    if failed:
        raise SystemExit("a client failed")


def main():
    o = parse(sys.argv[1:])
    uid = int(o["as-uid"]) if o["as-uid"] is not None else None
    d = Daemon(o["binary"], o["ownership"], o["callgrind"])
    workload = o["workload"]
    requests = 0
    try:
        if workload == "puts":
            objects, n = int(o.get("objects", 20000)), int(o.get("n", 3000))

            def fill(warm=True):
                batch = 1000
                c = connect(d.sock)
                for b in range(0, objects, batch):
                    ops = [{"method": "object.put", "params": {"collection": "bench", "key": f"k{i:08}",
                            "value": {"n": i}}} for i in range(b, min(objects, b + batch))]
                    call(c, "transact", {"ops": ops})
                if warm:
                    closed_loop(d.sock, [line("object.put", {"collection": "bench", "key": f"w{i:08}",
                                       "value": {"n": i}}) for i in range(500)], 25)
            lines = [line("object.put", {"collection": "bench", "key": f"p{i:08}", "value": {"n": i}})
                     for i in range(n)]
            if o.get("uids"):
                # Puts of several uids at once: each batch sorts them by uid (BatchShares.order).
                uids = [2001 + u for u in range(int(o["uids"]))]
                per = max(1, 25 // len(uids))
                warm = [line("object.put", {"collection": "bench", "key": f"w{i:08}", "value": {"n": i}})
                        for i in range(500)]
                as_client(uid, lambda: fill(warm=False))
                as_clients(uids, lambda k: closed_loop(d.sock, warm[k::len(uids)], per))
                d.zero()
                as_clients(uids, lambda k: closed_loop(d.sock, lines[k::len(uids)], per))
            else:
                as_client(uid, fill)
                d.zero()
                as_client(uid, lambda: closed_loop(d.sock, lines, 25))
            d.dump()
            requests = n
        elif workload == "held":
            files, depth = int(o.get("files", 10)), int(o.get("depth", 1))
            objects, n = int(o.get("objects", 10)), int(o.get("n", 20))
            folder = d.root + "".join(f"/d{i}" for i in range(depth - 1))
            os.makedirs(folder, exist_ok=True)
            for f in range(files):
                open(f"{folder}/f{f}", "w").close()
            owner = pwd.getpwuid(uid if uid is not None else os.getuid()).pw_name
            for dirpath, _, names in os.walk(d.root):
                os.chown(dirpath, uid or 0, uid or 0)
                for name in names:
                    os.chown(os.path.join(dirpath, name), uid or 0, uid or 0)

            def setup():
                c = connect(d.sock)
                for m in range(objects):
                    call(c, "object.put", {"collection": "held", "key": f"o{m}", "value": {"m": m}})
                    for f in range(files):
                        call(c, "edge.add", {"name": f"e{m}", "source": {"collection": "held", "key": f"o{m}"},
                                             "destination": {"file": f"{folder}/f{f}"}, "rules": []})
            as_client(uid, setup)
            print(f"held: owner {owner}, files like {folder}/f0", file=sys.stderr)

            def run(rounds):
                conns = [connect(d.sock) for _ in range(objects)]
                for _ in range(rounds):
                    for m, c in enumerate(conns):
                        c.sendall(line("object.put", {"collection": "held", "key": f"o{m}", "value": {"m": m}}))
                    for c in conns:
                        reply = b""
                        while not reply.endswith(b"\n"):
                            reply += c.recv(1 << 16)
                        if b'"error"' in reply:
                            raise SystemExit(reply.decode())
            as_client(uid, lambda: run(1))  # warm-up: the update path's first use
            d.zero()
            as_client(uid, lambda: run(n))
            d.dump()
            requests = objects * n
        elif workload == "delete":
            inbound, objects = int(o.get("inbound", 0)), int(o.get("objects", 100))
            rules = [r for r in o.get("rules", "").split(",") if r]

            def setup():
                c = connect(d.sock)
                for m in range(objects + 1):
                    ops = [{"method": "object.put", "params": {"collection": "t", "key": f"t{m}", "value": {}}}]
                    for e in range(inbound):
                        ops.append({"method": "object.put", "params": {"collection": "s", "key": f"s{m}-{e}",
                                    "value": {}}})
                        ops.append({"method": "edge.add", "params": {"name": "in", "rules": rules,
                                    "source": {"collection": "s", "key": f"s{m}-{e}"},
                                    "destination": {"collection": "t", "key": f"t{m}"}}})
                    call(c, "transact", {"ops": ops})
                call(c, "object.delete", {"collection": "t", "key": f"t{objects}"})  # warm-up
            as_client(uid, setup)
            lines = [line("object.delete", {"collection": "t", "key": f"t{m}"}) for m in range(objects)]
            d.zero()
            as_client(uid, lambda: closed_loop(d.sock, lines, 10))
            d.dump()
            requests = objects
        elif workload == "pipeline":
            method, n = o.get("method", "ping"), int(o.get("n", 20))

            def setup():
                c = connect(d.sock)
                ops = [{"method": "object.put", "params": {"collection": "bench", "key": f"k{i:08}",
                        "value": {"n": i}}} for i in range(1000)]
                call(c, "transact", {"ops": ops})
            as_client(uid, setup)
            one = (lambda i: line("ping")) if method == "ping" else (
                lambda i: line("object.get", {"collection": "bench", "key": f"k{i % 1000:08}"}))
            chunk, count = b"", 0
            while len(chunk) < 65536:
                piece = one(count)
                if len(chunk) + len(piece) > 65536:
                    break
                chunk += piece
                count += 1
            print(f"pipeline: {count} requests, {len(chunk)} bytes a write", file=sys.stderr)

            def run():
                c = connect(d.sock)
                for _ in range(n):
                    c.sendall(chunk)
                    got = 0
                    while got < count:
                        data = c.recv(1 << 20)
                        if not data:
                            raise SystemExit("closed")
                        if b'"error"' in data:
                            raise SystemExit(data[:300].decode())
                        got += data.count(b"\n")
            run_once = run
            as_client(uid, run_once)  # warm-up
            d.zero()
            as_client(uid, run_once)
            d.dump()
            requests = count * n
        elif workload == "pool":
            method, n = o.get("method", "pending"), int(o.get("n", 500))

            def setup():
                c = connect(d.sock)
                ops = [{"method": "object.put", "params": {"collection": "bench", "key": f"k{i:08}",
                        "value": {"n": i, "size": i}}} for i in range(1000)]
                call(c, "transact", {"ops": ops})
            setup()
            request = line("pending", {"limit": 1}) if method == "pending" else line(
                "index.query", {"where": "WHERE collection = ? AND key = ?", "params": ["bench", "k00000007"]})

            def run():
                c = connect(d.sock)
                for _ in range(n):
                    c.sendall(request)
                    reply = b""
                    while not reply.endswith(b"\n"):
                        reply += c.recv(1 << 16)
                    if b'"error"' in reply:
                        raise SystemExit(reply.decode())
            as_client(uid, run)  # warm-up
            d.zero()
            as_client(uid, run)
            d.dump()
            requests = n
        elif workload == "verify":
            objects, replaced = int(o.get("objects", 2000)), o.get("replaced", "no") == "yes"
            folder = d.root + "/v"
            os.makedirs(folder, exist_ok=True)
            os.chown(folder, uid or 0, uid or 0)
            for i in range(objects):
                with open(f"{folder}/f{i}", "w") as f:
                    f.write("x")
                os.chown(f"{folder}/f{i}", uid or 0, uid or 0)
            owner = pwd.getpwuid(uid if uid is not None else os.getuid()).pw_name

            def setup():
                c = connect(d.sock)
                for b in range(0, objects, 500):
                    ops = [{"method": "object.put", "params": {"collection": owner, "key": f"k{i}",
                            "value": {"file": f"{folder}/f{i}"}}} for i in range(b, min(objects, b + 500))]
                    call(c, "transact", {"ops": ops})
            as_client(uid, setup)
            if replaced:
                for i in range(objects):
                    with open(f"{folder}/f{i}.new", "w") as f:
                        f.write("x")
                    os.chown(f"{folder}/f{i}.new", uid or 0, uid or 0)
                    os.rename(f"{folder}/f{i}.new", f"{folder}/f{i}")
            c = connect(d.sock)
            call(c, "verify")  # warm-up
            d.zero()
            r = call(c, "verify")
            d.dump()
            print(f"verify: found {r['found']}", file=sys.stderr)
            requests = objects
        else:
            raise SystemExit("unknown workload " + workload)
        print(f"{workload}: {requests} requests, daemon cpu {(d.cpu1 - d.cpu0) / requests * 1e6:.1f} us a request")
    finally:
        d.stop()
    if o["callgrind"]:
        report(o["callgrind"], requests)


def report(out, requests):
    folder, base = os.path.split(os.path.abspath(out))
    parts = sorted(f for f in os.listdir(folder) if f.startswith(base + ".") and "-" in f[len(base):])
    dumps = [f for f in parts if f[len(base) + 1:].split("-")[0] == "1"]
    total = 0
    for f in dumps:
        path = os.path.join(folder, f)
        ir = 0
        with open(path) as fh:
            for row in fh:
                if row.startswith("totals:") or row.startswith("summary:"):
                    ir = int(row.split()[1])
        if ir == 0:
            continue
        total += ir
        top = subprocess.run(["callgrind_annotate", "--inclusive=yes", path], capture_output=True,
                             text=True).stdout.splitlines()
        names = [r.split("  ")[-1].strip()[:90] for r in top if "(" in r and ":" in r][2:5]
        print(f"{f}: {ir:,} instructions, {ir / requests:,.0f} a request; {' | '.join(names)}")
    print(f"all threads: {total / requests:,.0f} a request")


if __name__ == "__main__":
    main()
