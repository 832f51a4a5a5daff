// Connections of many uids at once, for the tests of what each uid may hold: python3, run as
// root, forks a child for each connection, which takes the uid, connects and hands the
// connection back (the daemon reads the child's uid with SO_PEERCRED). Each connection then
// sends one ping line of the size asked, whole ("lines"), or without its end until the test
// writes a line to the FIFO given ("partial").

import Foundation
import Testing

enum ManyUsers {
    /// Forking children that take other uids needs root.
    static let canRun = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    /// argv: socket, FIFO, mode ("lines" or "partial"), then "uid:connections:bytes" each.
    /// Prints "connected" once every connection is open, "sent" as each has sent its line (in
    /// "partial", all but its end), "answer ok" or "answer <reply>" as each is answered, and
    /// "done" after the last.
    static let script = """
        import json, os, socket, sys, threading
        path, fifo, mode = sys.argv[1], sys.argv[2], sys.argv[3]
        lock = threading.Lock()
        def say(text):
            with lock:
                sys.stdout.write(text + "\\n"); sys.stdout.flush()
        def connect_as(uid):
            a, b = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([]); os.setgid(uid); os.setuid(uid)
                    s = socket.socket(socket.AF_UNIX); s.connect(path)
                    socket.send_fds(b, [b"x"], [s.fileno()])
                finally:
                    os._exit(0)
            _, fds, _, _ = socket.recv_fds(a, 1, 1)
            os.waitpid(pid, 0); a.close(); b.close()
            return socket.socket(fileno=fds[0])
        conns = []
        for spec in sys.argv[4:]:
            uid, n, size = (int(x) for x in spec.split(":"))
            conns += [(connect_as(uid), size) for _ in range(n)]
        head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        tail = b'"}}\\n'
        go = threading.Event()
        def client(s, size):
            body = head + b"a" * (size - len(head) - len(tail))
            if mode == "lines":
                s.sendall(body + tail); say("sent")
            else:
                s.sendall(body); say("sent")
                go.wait(); s.sendall(tail)
            reply = s.makefile("rb").readline()
            ok = reply and "result" in json.loads(reply)
            say("answer ok" if ok else "answer %r" % reply[:200])
        threads = [threading.Thread(target=client, args=c, daemon=True) for c in conns]
        for t in threads: t.start()
        say("connected")
        if mode == "partial":
            open(fifo).readline()
            go.set()
        for t in threads: t.join()
        say("done")
        """

    /// Starts the script; in "partial" mode, `fifo` is made here and `finish` ends the lines.
    static func start(_ h: DaemonHarness, fifo: String, mode: String, _ specs: [String]) throws -> BackgroundProcess {
        if mode == "partial" { #expect(mkfifo(fifo, 0o600) == 0) }
        return try BackgroundProcess("/usr/bin/python3", ["-c", script, h.socket, fifo, mode] + specs)
    }

    /// Lets the connections of a "partial" run send the ends of their lines.
    static func finish(fifo: String) {
        guard let end = FileHandle(forWritingAtPath: fifo) else { return }
        end.write(Data("go\n".utf8))
        try? end.close()
    }

    /// How many lines of `p`'s output are `line`.
    static func count(_ p: BackgroundProcess, _ line: String) -> Int { p.output.count { $0 == line } }
}
