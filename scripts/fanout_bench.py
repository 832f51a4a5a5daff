#!/usr/bin/env python3
"""A commit's events to many watchers: scripts/fanout_bench.py ASSETD [--callgrind OUT] [WATCHERS] [PUTS] [COMMITS]

Starts ASSETD (under callgrind if asked, profile in OUT) in a temp folder, opens WATCHERS
connections (default 255) that watch and read everything (or watch with the params given as
JSON in FANOUT_WATCH, which must take the puts: `{"collections":["fan"]}`), commits COMMITS
(default 1) transacts of PUTS puts (default 14000) one after another, and waits until every
watcher has read every event. Prints the daemon's CPU
time meanwhile and, as a hint (wall time), the slowest answer to a client sending pings one
after another.
Give callgrind a `strip --strip-debug` copy of the binary (valgrind 3.19 cannot read Swift's
DWARF 5). Then
`callgrind_annotate --inclusive=yes OUT | grep -E 'TOTALS|broadcast|send'`.
"""

import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def main():
    args = sys.argv[1:]
    binary = args.pop(0)
    out = None
    if args and args[0] == "--callgrind":
        out = args[1]
        args = args[2:]
    watchers = int(args[0]) if args else 255
    puts = int(args[1]) if len(args) > 1 else 14000
    commits = int(args[2]) if len(args) > 2 else 1
    watch = json.loads(os.environ["FANOUT_WATCH"]) if os.environ.get("FANOUT_WATCH") else None
    d = tempfile.mkdtemp(prefix="fanout-bench-")
    os.makedirs(d + "/root")
    sock = d + "/control.sock"
    with open(d + "/assetd.toml", "w") as f:
        f.write(
            f'[store]\npath = "{d}/assetd.sqlite"\n[control]\nsocket = "{sock}"\n'
            'max_request_bytes = "4MiB"\n' + os.environ.get("FANOUT_CONTROL", "") + "\n"
            f'[files]\nroots = ["{d}/root"]\n[log]\nlevel = "warning"\n'
        )
    log = open(d + "/log", "w")
    command = [binary, "--config", d + "/assetd.toml"]
    if out:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + command
    daemon = subprocess.Popen(command, stdout=log, stderr=log)

    def connect():
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        return s

    def call(s, method, params=None, id=1):
        request = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            request["params"] = params
        s.sendall((json.dumps(request) + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            reply += s.recv(1 << 20)
        return json.loads(reply)

    for _ in range(600):
        try:
            c = connect()
            break
        except OSError:
            time.sleep(0.1)
    call(c, "ping")
    conns = []
    for _ in range(watchers):
        w = connect()
        call(w, "watch", watch)
        w.setblocking(False)
        conns.append(w)
    lines = {w.fileno(): 0 for w in conns}
    sel = selectors.DefaultSelector()
    for w in conns:
        sel.register(w, selectors.EVENT_READ)

    done = threading.Event()
    slowest = [0.0]

    def pinger():
        p = connect()
        while not done.is_set():
            t = time.monotonic()
            call(p, "ping")
            slowest[0] = max(slowest[0], time.monotonic() - t)

    def ops(n):
        return [
            {"method": "object.put", "params": {"collection": "fan", "key": "k%d" % (n * puts + i), "value": {}}}
            for i in range(puts)
        ]

    def cpu():
        # The daemon's user and system time (valgrind's own under callgrind).
        fields = open(f"/proc/{daemon.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")

    pings = threading.Thread(target=pinger)
    pings.start()
    cpu_before = cpu()
    started = time.monotonic()
    for n in range(commits):
        # One after another: each transact once every watcher read the one before.
        if n:
            reply = b""
            while not reply.endswith(b"\n"):  # the last transact's
                reply += c.recv(1 << 20)
        c.sendall((json.dumps({"jsonrpc": "2.0", "id": 2, "method": "transact", "params": {"ops": ops(n)}}) + "\n").encode())
        remaining = len(sel.get_map())
        want = (n + 1) * puts
        while remaining:
            for key, _ in sel.select(timeout=60):
                data = key.fileobj.recv(1 << 20)
                fd = key.fileobj.fileno()
                before = lines[fd]
                lines[fd] += data.count(b"\n")
                if before < want <= lines[fd]:
                    remaining -= 1
                if not data:
                    print("a watcher was closed", file=sys.stderr)
                    remaining -= 1
                    sel.unregister(key.fileobj)
    elapsed = time.monotonic() - started
    user, system = (after - before for after, before in zip(cpu(), cpu_before))
    done.set()
    pings.join()
    print(
        f"{watchers} watchers x {commits} x {puts} events: all read after {elapsed:.2f} s, slowest ping {slowest[0] * 1000:.1f} ms,"
        f" daemon cpu user {user:.2f} s system {system:.2f} s"
    )
    daemon.terminate()
    daemon.wait()
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
