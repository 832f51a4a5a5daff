// A connection that closes while its job waits for a turn on the pool has the job dropped
// unrun: closed by the daemon (a write to a peer gone failed) or by its peer hanging up. The
// dropped job's slot, maintenance claim and parse count are given back before any held job
// ends. Held as in PoolTurnsTests (ASSETD_DEBUG_HOLD_LONG_PARSE, FILE.held-N, FILE.release-N).

import AssetClient
import JSON
import Foundation
import Testing

#if DEBUG
@Suite struct DroppedPoolJobTests {
    /// nobody's 3 long lines held on the pool (argv[2] is FILE.held-3), then a victim
    /// connection that sends `victim` (a Python bytes expression) and closes once the daemon
    /// has read it all. nobody may hold 4 connections: a probe for a fifth, retried, is let in
    /// only once the daemon closed the victim; then "closed" is printed and `after` runs.
    static func script(victim: String, after: String = "") -> String {
        """
        import ctypes, fcntl, os, signal, socket, struct, sys, termios
        def wait_for(path):
            # Blocks on inotify until `path` is made (created or renamed in), no polling.
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_CLOEXEC)
            libc.inotify_add_watch(fd, os.path.dirname(path).encode(), 0x100 | 0x80)
            while not os.path.exists(path): os.read(fd, 4096)
            os.close(fd)
        params = ",".join('"p%d":%d' % (i, i) for i in range(6000))
        def long_line(i):
            return ('{"jsonrpc":"2.0","id":%d,"method":"ping","params":{%s}}\\n' % (i, params)).encode()
        def connect():
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); return s
        def answer(s):
            data = b""
            while not data.endswith(b"\\n"):
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            return data
        # Replies of about 60 KB each, left unread: 1.8 MB, more than the kernel takes for a
        # peer (the rest waits in the daemon, whose next write fails once the peer closed)
        # and less than connection_output_bytes.
        unread = "".join('{"jsonrpc":"2.0","id":%d,"method":"%s"}\\n' % (10 + i, "x" * 60000) for i in range(30)).encode()
        dry_run = b'{"jsonrpc":"2.0","id":98,"method":"policy.enforce","params":{"dry_run":true}}\\n'
        held = []
        for i in range(3):
            s = connect(); s.sendall(long_line(i)); held.append(s)
        wait_for(sys.argv[2])
        victim = connect()
        victim.sendall(\(victim))
        # The daemon has read it all (and taken the last request in that read's callback): no
        # event says a peer consumed the bytes, so the kernel's count of unread ones is polled.
        while struct.unpack("i", fcntl.ioctl(victim, termios.TIOCOUTQ, b"\\0" * 4))[0]: os.sched_yield()
        victim.close()
        while True:
            s = connect(); s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
            data = answer(s)
            s.close()
            if b'"result"' in data: break  # else refused (no slot yet): each try is a round trip
        print("closed", flush=True)
        \(after)
        while True: signal.pause()  # holds the connections until stopped
        """
    }

    /// `stats`'s debug object, on a connection of its own; nil if not answered within 5 s.
    static func debug(_ h: DaemonHarness) -> JSONValue? {
        guard let c = try? h.client(timeout: 5) else { return nil }
        defer { c.close() }
        return try? c.call("stats")["debug"]
    }

    /// A held job ends: a dropped job would take its thread (and be held), not stats. Then
    /// everything is let go, and nothing stays counted.
    static func releaseAndDrain(_ h: DaemonHarness, _ hold: String) {
        #expect(FileManager.default.createFile(atPath: hold + ".release-1", contents: nil))
        #expect(eventually { PoolTurnsTests.poolJobs(h).map { $0.running == 2 && $0.queued == 0 } == true })
        #expect(!h.exists(hold + ".held-4"))
        try? FileManager.default.removeItem(atPath: hold)
        #expect(eventually { PoolTurnsTests.poolJobs(h).map { $0.running == 0 && $0.queued == 0 } == true })
        #expect(eventually { debug(h)?["parses_running"] == 0 }, "\(String(describing: debug(h)))")
        #expect(debug(h)?["read_only_maintenance"] == .null)
    }

    @Test(
        "a connection the daemon closes has its waiting long line dropped unrun",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func closedByTheDaemon() throws {
        let (h, hold) = try PoolTurnsTests.heldDaemon("max_connections_per_uid = 4", debugStats: true)
        let flood = try PoolTurnsTests.asUser(
            Nobody.uid, Self.script(victim: "unread + long_line(99)"), [h.socket, hold + ".held-3"])
        defer { flood.stop() }
        #expect(eventually { flood.output.contains("closed") }, "\(flood.output)")
        Self.releaseAndDrain(h, hold)
        #expect(h.stop() == 0)
    }

    @Test(
        "a peer that hangs up while its long line waits for a turn is closed, the line dropped",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func peerHungUp() throws {
        // Nothing is written to the victim: only its hang-up tells the daemon.
        let (h, hold) = try PoolTurnsTests.heldDaemon("max_connections_per_uid = 4", debugStats: true)
        let flood = try PoolTurnsTests.asUser(
            Nobody.uid, Self.script(victim: "long_line(99)"), [h.socket, hold + ".held-3"])
        defer { flood.stop() }
        #expect(eventually { flood.output.contains("closed") }, "\(flood.output)")
        Self.releaseAndDrain(h, hold)
        #expect(h.stop() == 0)
    }

    @Test(
        "a dropped dry run gives its maintenance slot back before any held job ends",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func droppedDryRunFreesTheSlot() throws {
        let (h, hold) = try PoolTurnsTests.heldDaemon("max_connections_per_uid = 4", debugStats: true)
        // Once the victim is closed, the same dry run on another connection, after a ping's
        // round trip: the dropped job gave the slot back (on the thread the daemon keeps, for
        // an empty job) while the probe and this connection were let in and answered.
        let after = """
            s = connect(); s.sendall(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\\n'); answer(s); held.append(s)
            s.sendall(dry_run)
            # Read by the daemon (the kernel's count of unread bytes: no event says so).
            while struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\\0" * 4))[0]: os.sched_yield()
            print("sent", flush=True)
            print(answer(s).decode().strip(), flush=True)
            """
        let flood = try PoolTurnsTests.asUser(
            Nobody.uid, Self.script(victim: "unread + dry_run", after: after), [h.socket, hold + ".held-3"])
        defer { flood.stop() }
        #expect(eventually { flood.output.contains("sent") }, "\(flood.output)")
        // The dry run waits for a turn (answered once a thread frees), not refused `busy`.
        Self.releaseAndDrain(h, hold)
        #expect(eventually { flood.output.joined().contains(#""id":98"#) }, "\(flood.output)")
        let answer = flood.output.joined()
        #expect(answer.contains(#""result""#) && !answer.contains("busy"), "\(flood.output)")
        #expect(h.stop() == 0)
    }
}
#endif
