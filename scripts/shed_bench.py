#!/usr/bin/env python3
"""The cost of being over the total with nobody behind: scripts/shed_bench.py ASSETD OUT [PINGS]

Starts ASSETD under callgrind (profile in OUT) in a temp folder, holds control.total_buffer_bytes
over with one connection that reads none of its replies (under its own bound, so never behind),
opens 200 idle connections, and sends PINGS pings (default 2000) one after another. Give it a
`strip --strip-debug` copy of a debug build: valgrind 3.19 cannot read Swift's DWARF 5. Then
`callgrind_annotate --inclusive=yes OUT | grep -E 'TOTALS|shedBacklogs|isBehind'`.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def main():
    binary, out = sys.argv[1], sys.argv[2]
    pings = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    d = tempfile.mkdtemp(prefix="shed-bench-")
    os.makedirs(d + "/root")
    sock = d + "/control.sock"
    with open(d + "/assetd.toml", "w") as f:
        f.write(
            f'[store]\npath = "{d}/assetd.sqlite"\n[control]\nsocket = "{sock}"\n'
            'total_buffer_bytes = "1MiB"\nconnection_output_bytes = "16MiB"\nmax_request_bytes = "4MiB"\n'
            f'[files]\nroots = ["{d}/root"]\n[log]\nlevel = "warning"\n'
        )
    log = open(d + "/log", "w")
    daemon = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary, "--config", d + "/assetd.toml"],
        stdout=log,
        stderr=log,
    )

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
    else:
        sys.exit("assetd did not start: see " + d + "/log")
    call(c, "object.put", {"collection": "big", "key": "x", "value": "b" * 300_000})
    get = {"jsonrpc": "2.0", "method": "object.get", "params": {"collection": "big", "key": "x"}}
    stalled = connect()
    stalled.sendall(b"".join((json.dumps(dict(get, id=i)) + "\n").encode() for i in range(8)))
    while call(c, "stats")["result"]["buffers"]["paused_connections"] != 1:
        time.sleep(0.05)
    idle = [connect() for _ in range(200)]
    pinger = connect()
    start = time.time()
    for i in range(pings):
        call(pinger, "ping", id=i)
    buffers = call(c, "stats")["result"]["buffers"]
    print("pings", pings, "seconds", round(time.time() - start, 1), "buffers", buffers)
    daemon.terminate()
    daemon.wait()
    del stalled, idle
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
