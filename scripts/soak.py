#!/usr/bin/env python3
"""Crash soak for assetd: a random mix of writes, SIGKILL at random moments, invariants after
each restart.

Usage: soak.py [KILLS] [SECONDS]. Each cycle runs the workload for a random time up to SECONDS,
kills the daemon with SIGKILL, restarts it and checks, against a log kept on this side of what
the daemon acknowledged (the request in flight at the kill may or may not have committed):

- every acknowledged write is present: objects with their values, edges with their rules;
- I1: no file is missing that a live object holds or an edge references;
- I2: once a sweep settles nothing is pending, and every file that was registered and that
  nothing references any more is gone;
- `assetctl verify` is clean (dangling edges, registry rows, index truth).

Two groups of objects keep the expected state computable: collection "p" holds files through
the built-in `file` field (shared files are reference counted, no rule cascades out of the
group); collection "e" carries manual edges with every valid rule set, to each other and to
files of its own, and is only deleted through calls whose reply lists the whole cascade.
Exits 1 on the first cycle with a violation, after printing each one. Standard library only.
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RULES = [
    "notifyIfSourceDeleted", "notifyIfDestinationDeleted", "deleteSourceIfDestinationDeleted",
    "deleteDestinationIfSourceDeleted", "deleteSourceIfAllDestinationsDeleted",
    "deleteDestinationIfAllSourcesDeleted", "denyDeleteSource", "denyDeleteDestination",
]
FIRES_ON_DESTINATION = 2 | 4 | 16
FIRES_ON_SOURCE = 1 | 8 | 32


def valid_rule_masks(to_file):
    """Every rule set the daemon must accept (the illegal pairs of the delete rules refused)."""
    masks = []
    for m in range(256):
        if m & 8 and m & 32 or m & 4 and m & 16:
            continue
        if m & 128 and m & FIRES_ON_DESTINATION or m & 64 and m & FIRES_ON_SOURCE:
            continue
        if to_file and m & (1 | 64 | 128):
            continue
        masks.append(m)
    return masks


OBJECT_MASKS = valid_rule_masks(False)
FILE_MASKS = valid_rule_masks(True)


def rule_names(mask):
    return sorted(RULES[i] for i in range(8) if mask >> i & 1)


class Lost(Exception):
    """The connection broke: the daemon died with the request in flight."""


class RPCError(Exception):
    def __init__(self, error):
        super().__init__(json.dumps(error))
        self.code = (error.get("data") or {}).get("code")


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        try:
            self.sock.sendall(line.encode() + b"\n")
            while b"\n" not in self.buf:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise Lost(method)
                self.buf += chunk
        except (ConnectionError, BrokenPipeError) as e:
            raise Lost(method) from e
        raw, self.buf = self.buf.split(b"\n", 1)
        reply = json.loads(raw)
        if reply.get("id") != self.next_id:
            raise AssertionError(f"reply id {reply.get('id')} to request {self.next_id}")
        if "error" in reply:
            raise RPCError(reply["error"])
        return reply["result"]

    def close(self):
        self.sock.close()


def ref(key):
    c, k = key.split("/", 1)
    return {"collection": c, "key": k}


def key_of(r):
    return r["collection"] + "/" + r["key"]


def node_of(d):
    return "file:" + d["file"] if "file" in d else key_of(d)


class Soak:
    def __init__(self, kills, seconds, bindir):
        self.kills, self.seconds = kills, seconds
        self.assetd, self.assetctl = bindir + "/assetd", bindir + "/assetctl"
        self.dir = tempfile.mkdtemp(prefix="assetd-soak-")
        self.root = self.dir + "/root"
        self.sock = self.dir + "/s.sock"
        self.log = self.dir + "/assetd.log"
        for d in (self.root + "/p", self.root + "/e", self.dir + "/state"):
            os.makedirs(d)
        with open(self.dir + "/assetd.toml", "w") as f:
            f.write(f'[store]\npath = "{self.dir}/state/assetd.sqlite"\n[control]\nsocket = "{self.sock}"\n'
                    f'[files]\nroots = ["{self.root}"]\n[log]\nlevel = "warning"\n')
        self.proc = None
        self.rng = random.Random(int(os.environ.get("SOAK_SEED", time.time_ns())))
        # The expected state: values of live objects, e-edges (name, source, destination) -> rule
        # names; what the request in flight at a kill may have left instead.
        self.objects = {}
        self.edges = {}
        self.maybe_objects = {}
        self.maybe_edges = set()
        self.counter = 0
        self.registered = set()  # plain files some acknowledged write referenced
        self.queued = set()      # files acknowledged replies said were queued for unlink
        self.dead = set()        # files never to be referenced again (released or queued)
        self.created = set()     # every file this soak made and has not yet seen gone for good
        self.violations = []
        self.writes_checked = self.files_checked = self.acknowledged = 0

    # -- the daemon

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.assetd, "--config", self.dir + "/assetd.toml"],
                                         stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.fail(f"assetd exited with {self.proc.returncode} at start:\n{self.log_tail()}")
                raise SystemExit(self.finish())
            try:
                c = Conn(self.sock)
                c.call("ping")
                return c
            except (OSError, Lost, RPCError):
                time.sleep(0.05)
        self.fail("assetd did not answer ping within 60 s of start:\n" + self.log_tail())
        raise SystemExit(self.finish())

    def log_tail(self):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-20:])

    def fail(self, message):
        self.violations.append(message)
        print("soak: VIOLATION: " + message, file=sys.stderr)

    # -- files

    def new_file(self, group):
        self.counter += 1
        path = f"{self.root}/{group}/f{self.counter}"
        with open(path, "wb") as f:
            f.write(os.urandom(self.rng.randint(1, 4096)))
        self.created.add(path)
        return path

    def live_plain_files(self):
        return {p for k, v in self.objects.items() if k.startswith("p/") for p in v.get("file", [])}

    def live_e_files(self):
        return {d[5:] for (_, _, d) in self.edges if d.startswith("file:")}

    def pick_files(self, group):
        live = sorted((self.live_plain_files() if group == "p" else self.live_e_files()) - self.dead)
        files = []
        for _ in range(self.rng.randint(1, 2)):
            if live and self.rng.random() < 0.4:
                files.append(self.rng.choice(live))
            else:
                files.append(self.new_file(group))
        return sorted(set(files))

    # -- the workload: each step returns (request, what to do with the reply, what may be)

    def step(self, conn):
        r = self.rng.random()
        plain = sorted(k for k in self.objects if k.startswith("p/"))
        es = sorted(k for k in self.objects if k.startswith("e/"))
        if len(plain) > 300 and r < 0.25:  # keep the store, and so each check, bounded
            return self.delete(conn, self.rng.choice(plain), False)
        if r < 0.25 or not plain:
            self.counter += 1
            key = f"p/k{self.counter}"
            return self.put(conn, key, {"n": self.counter, "file": self.pick_files("p")})
        if r < 0.33:
            return self.put(conn, self.rng.choice(plain), {"n": self.counter, "file": self.pick_files("p")})
        if r < 0.45:
            return self.delete(conn, self.rng.choice(plain), False)
        if r < 0.60:
            return self.transact(conn, plain)
        if len(es) > 150 and r < 0.68:
            return self.delete(conn, self.rng.choice(es), True)
        if r < 0.68 or len(es) < 2:
            self.counter += 1
            key = self.rng.choice(es) if es and self.rng.random() < 0.3 else f"e/k{self.counter}"
            return self.put(conn, key, {"n": self.counter})
        if r < 0.78:
            src, dst = self.rng.choice(es), self.rng.choice(es)
            return self.edge_add(conn, src, dst, self.rng.choice(OBJECT_MASKS))
        if r < 0.85:
            path = self.pick_files("e")[0]
            return self.edge_add(conn, self.rng.choice(es), "file:" + path, self.rng.choice(FILE_MASKS))
        if r < 0.92:
            return self.delete(conn, self.rng.choice(es), True)
        if r < 0.95 and self.edges:
            name, src, dst = self.rng.choice(sorted(self.edges))
            params = {"name": name, "source": ref(src), "destination": self.dest(dst), "reason": "edge"}
            self.maybe_edges = {(name, src, dst)}
            conn.call("edge.remove", params)
            del self.edges[(name, src, dst)]
            return
        # Leases protect against eviction only; they must not disturb anything else.
        objs = [ref(k) for k in self.rng.sample(plain, min(2, len(plain)))]
        files = sorted(self.live_plain_files() - self.dead)[:2]
        lease = conn.call("lease.acquire", {"objects": objs, "files": files, "ttl": "2s"})
        if self.rng.random() < 0.5:
            conn.call("lease.release", {"lease": lease["lease"]})

    @staticmethod
    def dest(node):
        return {"file": node[5:]} if node.startswith("file:") else ref(node)

    def put(self, conn, key, value):
        self.maybe_objects = {key: [self.objects.get(key), value]}
        conn.call("object.put", dict(ref(key), value=value))
        self.acknowledge({key: value}, [], [])

    def edge_add(self, conn, src, dst, mask):
        name = self.rng.choice(["a", "b"])
        triple = (name, src, dst)
        self.maybe_edges = {triple}
        conn.call("edge.add", {"name": name, "source": ref(src), "destination": self.dest(dst),
                               "rules": rule_names(mask) if self.rng.random() < 0.8 else mask})
        self.edges[triple] = rule_names(mask)
        self.acknowledged += 1

    def delete(self, conn, key, cascades):
        # In flight, a delete in group e may have taken any e object (its cascade) with it.
        group = [k for k in self.objects if k.startswith("e/")] if cascades else [key]
        self.maybe_objects = {k: [self.objects[k], None] for k in group}
        self.maybe_edges = set(self.edges) if cascades else set()
        try:
            reply = conn.call("object.delete", ref(key))
        except RPCError as e:
            if cascades and e.code == "delete_denied":
                return
            raise
        self.acknowledge({}, [key_of(d) for d in reply["deleted"]], reply["unlinks_queued"])

    def transact(self, conn, plain):
        """A few puts and deletes in group p, a flush somewhere: all or nothing."""
        state = {k: self.objects[k] for k in plain}
        ops = []
        for _ in range(self.rng.randint(2, 6)):
            live = sorted(state)
            r = self.rng.random()
            if r < 0.15:
                ops.append({"method": "flush", "params": {}})
            elif r < 0.45 and live:
                k = self.rng.choice(live)
                ops.append({"method": "object.delete", "params": ref(k)})
                del state[k]
            else:
                self.counter += 1
                k = self.rng.choice(live) if live and self.rng.random() < 0.3 else f"p/k{self.counter}"
                v = {"n": self.counter, "file": self.pick_files("p")}
                ops.append({"method": "object.put", "params": dict(ref(k), value=v)})
                state[k] = v
        touched = {o["params"]["collection"] + "/" + o["params"]["key"] for o in ops if o["method"] != "flush"}
        self.maybe_objects = {k: [self.objects.get(k), state.get(k)] for k in touched}
        reply = conn.call("transact", {"ops": ops})
        self.acknowledge({k: state[k] for k in touched if k in state},
                         [k for k in touched if k not in state], reply["unlinks_queued"])
        for d in reply["deleted"]:
            if key_of(d) in state:
                self.fail(f"transact reported {key_of(d)} deleted, though its last op put it")

    def acknowledge(self, puts, deleted, queued):
        before = self.live_plain_files()
        for k, v in puts.items():
            self.objects[k] = v
            self.registered.update(v.get("file", []))
        for k in deleted:
            self.objects.pop(k, None)
            for t in [t for t in self.edges if k in (t[1], t[2])]:
                del self.edges[t]
        for p in queued:
            self.queued.add(p)
            self.dead.add(p)
            for t in [t for t in self.edges if t[2] == "file:" + p]:
                del self.edges[t]
        self.dead |= before - self.live_plain_files()
        self.acknowledged += len(puts) + len(deleted)

    def work(self, conn, seconds):
        """Runs steps until the kill at a random moment breaks the connection."""
        pid = self.proc.pid
        timer = threading.Timer(self.rng.uniform(0.05, seconds), lambda: os.kill(pid, signal.SIGKILL))
        timer.start()
        try:
            while True:
                self.maybe_objects, self.maybe_edges = {}, set()
                try:
                    self.step(conn)
                except RPCError as e:
                    self.fail(f"unexpected error reply: {e}")
                    self.maybe_objects, self.maybe_edges = {}, set()
        except Lost:
            pass
        finally:
            timer.cancel()
            conn.close()
        self.proc.wait()

    # -- the checks after a restart

    def check(self, conn):
        # Acknowledged objects, and the request in flight's possible outcomes.
        for key in sorted(set(self.objects) | set(self.maybe_objects)):
            got = conn.call("object.get", ref(key))
            value = got["value"] if got is not None else None
            allowed = self.maybe_objects.get(key, [self.objects.get(key)])
            if value not in allowed:
                self.fail(f"{key}: expected one of {allowed}, read {value}")
            if key not in self.maybe_objects:
                self.writes_checked += 1
            if value is None:
                self.objects.pop(key, None)
            else:
                self.objects[key] = value
                if key.startswith("p/"):
                    self.registered.update(value.get("file", []))
        self.maybe_objects = {}
        # Acknowledged edges of group e, read back from each live source.
        actual = {}
        for key in sorted(k for k in self.objects if k.startswith("e/")):
            for e in conn.call("edge.find", {"source": ref(key)})["edges"]:
                actual[(e["name"], key, node_of(e["destination"]))] = sorted(e["rules"])
        for triple, rules in self.edges.items():
            if triple in self.maybe_edges:
                continue
            self.writes_checked += 1
            if actual.get(triple) != rules:
                self.fail(f"edge {triple}: expected rules {rules}, read {actual.get(triple)}")
        for triple in actual.keys() - self.edges.keys() - self.maybe_edges:
            self.fail(f"edge {triple} is there but was never acknowledged")
        self.edges = actual
        self.maybe_edges = set()
        live_plain = self.live_plain_files()
        self.dead |= self.registered - live_plain
        # I1: what a live object holds is on disk.
        for p in sorted(live_plain | self.live_e_files()):
            self.files_checked += 1
            if not os.path.exists(p):
                self.fail(f"I1: {p} is held by a live object but is gone")
        # I2: the queue drains.
        for _ in range(100):
            conn.call("sweep")
            pending = conn.call("pending", {"limit": 10})
            rows = pending.get("pending", pending) if isinstance(pending, dict) else pending
            if not rows:
                break
            time.sleep(0.1)
        else:
            self.fail(f"I2: unlinks still pending after 100 sweeps: {rows}")
        live_e = self.live_e_files()
        for p in sorted(self.created):
            if p in live_plain or p in live_e:
                continue
            self.files_checked += 1
            report = conn.call("file.get", {"path": p})
            if report is not None and report.get("edges"):
                if not os.path.exists(p):
                    self.fail(f"I1: {p} is referenced by {report['edges']} but is gone")
                continue
            if not os.path.exists(p):
                # Released and gone: it is never referenced again, so checked once is enough.
                if p in self.dead:
                    self.created.discard(p)
                continue
            if p in self.registered or p in self.queued:
                self.fail(f"I2: {p} was registered, nothing references it, and it is still there")
        result = subprocess.run([self.assetctl, "--socket", self.sock, "--json", "verify"],
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            self.fail(f"verify exited {result.returncode}: {result.stdout}{result.stderr}")

    def run(self):
        conn = self.start()
        for cycle in range(self.kills):
            self.work(conn, self.seconds)
            conn = self.start()
            self.check(conn)
            if (cycle + 1) % 10 == 0:
                print(f"soak: {cycle + 1} kills, {self.writes_checked} acknowledged writes checked", file=sys.stderr)
            if self.violations:
                print(f"soak: cycle {cycle + 1}; daemon log:\n{self.log_tail()}", file=sys.stderr)
                conn.close()
                return self.finish()
        conn.close()
        self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(timeout=60)
        if status != 0:
            self.fail(f"assetd exited {status} on SIGTERM")
        return self.finish()

    def finish(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        print(f"soak: {self.kills} kills, {self.acknowledged} writes acknowledged, "
              f"{self.writes_checked} acknowledged writes checked, {self.files_checked} files checked, "
              f"{len(self.violations)} violations")
        return 1 if self.violations else 0


def main():
    kills = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    bindir = os.environ.get("ASSETD_BIN", ".build/debug")
    if os.path.isfile(bindir):
        bindir = os.path.dirname(bindir)
    soak = Soak(kills, seconds, os.path.abspath(bindir))
    try:
        return soak.run()
    except BaseException:
        soak.finish()
        raise


if __name__ == "__main__":
    sys.exit(main())
