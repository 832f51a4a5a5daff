// Over control.total_buffer_bytes with watchers' events holding most of it, the daemon drops
// watchers behind, never a reader of plain replies (assetd(8), LIMITS): a watcher can watch
// again and read the state anew, and a reply lost is a request failed. Before, the connection
// behind with the most bytes waiting went first, and one big reply weighs more than what any
// watcher has refused (a slice at most): three big deletes' events, none of the reader's
// doing, dropped an admin reading a query's reply.
// Nor does a watcher pay for replies: a user over its share loses its own readers first, and
// replies over the total alone drop readers, never a watcher; events close no idle line.

import AssetClient
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct EventsOverTotalTests {
    @Test("over the total by events, a watcher behind is dropped, not a reader of a big reply")
    func watchersGoBeforeReaders() throws {
        // Events of one transact (8.7 MB weighed) alone over the 6 MiB total; a reply of
        // 1 MB behind its 64 KiB bound, far under the total alone.
        let h = try DaemonHarness(
            controlSection: """
                max_request_bytes = "8MiB"
                connection_output_bytes = "64KiB"
                total_buffer_bytes = "6MiB"
                """,
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        let value = String(repeating: "v", count: 1_000_000)
        try c.putObject("big", "x", .string(value))
        // An admin's get it does not read yet: what the socket does not take waits, over
        // the reader's bound, behind once the epoch has been stepped twice.
        let reader = try RawConnection(path: h.socket)
        reader.setReceiveTimeout(60)
        reader.send(TotalBufferVictimTests.get(7, "big"))
        #expect(
            eventually { (IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? 0) > 500_000 },
            "the reply waits in the daemon")
        // A watcher that reads nothing after its watch's reply: given a slice of the
        // transact's events, it holds them all (none behind them: no 16 MiB rule).
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch")
        try c.call("transact", WatcherDropOrderTests.puts("fan", from: 0, count: 2000))
        // Three steps: behind after two, whenever the watcher's socket filled.
        for _ in 0..<3 { IdleLineTests.step(h, step) }
        #expect(IdleLineTests.dropped(c) == 1, "\(IdleLineTests.buffers(c))")
        #expect(h.log.contains("dropping a watcher (uid \(getuid()))"))
        #expect(!h.log.contains("does not read its replies"))
        let reply = try #require(reader.readLine(), "the reader was not dropped")
        #expect(reply["id"] == 7)
        #expect(reply["result"]?["value"]?.stringValue == value)
        #expect((IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? .max) < 1 << 20, "the events were freed")
        withExtendedLifetime(watcher) {}
    }

    /// Runs `hoarder` as `uid` till it has sent its gets.
    static func hoard(_ h: DaemonHarness, uid: UInt32, count: Int, size: Int) throws -> BackgroundProcess {
        let p = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", hoarder, h.socket,
                String(count), String(size),
            ])
        #expect(p.waitForLine { $0 == "sent" }, "\(p.output)")
        #expect(p.output.contains("put ok"), "\(p.output)")
        return p
    }

    /// A user's: puts a value of `size` bytes, then gets it on `count` connections of its
    /// own and reads none of the replies.
    static let hoarder = """
        import os, signal, socket, sys
        path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        def connect():
            s = socket.socket(socket.AF_UNIX); s.connect(path); return s
        s = connect()
        col = b"nb%d" % os.getuid()
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"' + col
                  + b'","key":"x","value":"' + b"v" * size + b'"}}\\n')
        data = b""
        while b"\\n" not in data:
            data += s.recv(65536)
        print("put ok" if b'"result"' in data else "put " + data.decode()[:200], flush=True)
        readers = [connect() for _ in range(count)]
        for r in readers:
            r.sendall(b'{"jsonrpc":"2.0","id":2,"method":"object.get","params":{"collection":"' + col
                      + b'","key":"x"}}\\n')
        print("sent", flush=True)
        signal.pause()
        """

    @Test(
        "over the total, a user over its share loses its readers behind, not an admin's watcher",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"),
        arguments: [(3, 3_000_000), (2, 2_500_000)])
    func readersOverTheirShareGoBeforeWatchers(count: Int, size: Int) throws {
        // Share 3.1 MB. Nobody's replies not read: 3 of 3 MB are over the 6.3 MB total alone
        // (a watcher's drop could not bring it under); 2 of 2.5 MB are under it, over only
        // with the admin watcher's 3 MB of events. Both are over nobody's share.
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                max_request_bytes = "8MiB"
                connection_input_bytes = "8MiB"
                connection_output_bytes = "64KiB"
                total_buffer_bytes = "6MiB"
                """,
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        // Root's watcher, given a slice of 700 puts' events (3 MB weighed), reads none.
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch")
        try c.call("transact", WatcherDropOrderTests.puts("fan", from: 0, count: 700))
        let output = { Int(IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? 0) }
        let base = output() - 100_000
        let p = try Self.hoard(h, uid: Nobody.uid, count: count, size: size)
        defer { _ = p.stop() }
        // Every reply made: each waits in the daemon but what its socket took.
        #expect(eventually { output() >= base + count * (size - 300_000) }, "\(IdleLineTests.buffers(c))")
        for _ in 0..<3 { IdleLineTests.step(h, step) }
        #expect(IdleLineTests.dropped(c) >= 1, "\(IdleLineTests.buffers(c))")
        #expect(h.log.contains("dropping a connection (uid \(Nobody.uid)) over its user's share"))
        #expect(!h.log.contains("dropping a watcher"))
        #expect(try WatcherDropOrderTests.take(watcher, from: 0, count: 700), "the watcher got every event")
    }

    @Test(
        "over the total by replies alone, readers behind are dropped before any watcher",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func repliesOverTheTotalAloneSpareWatchers() throws {
        // Three users' replies of 2.5 MB not read, each under its 3.1 MB share: together over
        // the 6.3 MB total alone; two of them and the 0.9 MB of events are under it.
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                max_request_bytes = "8MiB"
                connection_input_bytes = "8MiB"
                connection_output_bytes = "64KiB"
                total_buffer_bytes = "6MiB"
                """,
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        // Root's watcher, given a slice of 200 puts' events (0.9 MB weighed), reads none.
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch")
        try c.call("transact", WatcherDropOrderTests.puts("fan", from: 0, count: 200))
        let output = { Int(IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? 0) }
        let base = output() - 100_000
        let size = 2_500_000
        let users = try (0..<3).map { try Self.hoard(h, uid: Nobody.uid - UInt32($0), count: 1, size: size) }
        defer { for p in users { _ = p.stop() } }
        #expect(eventually { output() >= base + 3 * (size - 300_000) }, "\(IdleLineTests.buffers(c))")
        for _ in 0..<3 { IdleLineTests.step(h, step) }
        #expect(IdleLineTests.dropped(c) >= 1, "\(IdleLineTests.buffers(c))")
        #expect(h.log.contains("that does not read its replies"))
        #expect(!h.log.contains("over its user's share"))
        #expect(!h.log.contains("dropping a watcher"))
        #expect(try WatcherDropOrderTests.take(watcher, from: 0, count: 200), "the watcher got every event")
    }

    @Test("over the total by events, an idle unfinished line is not closed; the watcher behind is dropped")
    func eventsDoNotCloseIdleLines() throws {
        let h = try DaemonHarness(
            controlSection: """
                max_request_bytes = "8MiB"
                connection_output_bytes = "64KiB"
                total_buffer_bytes = "6MiB"
                """,
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        // An admin's watcher that reads nothing, given a slice of 8.7 MB of events: over the
        // 6 MiB total by events alone.
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch")
        try c.call("transact", WatcherDropOrderTests.puts("fan", from: 0, count: 2000))
        // An admin's line begun, then nothing for the seconds stepped.
        let line = try RawConnection(path: h.socket)
        line.setReceiveTimeout(60)
        line.send(#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":""# + String(repeating: "a", count: 1000))
        #expect(eventually { IdleLineTests.input(c) >= 1000 }, "\(IdleLineTests.buffers(c))")
        for _ in 0..<3 { IdleLineTests.step(h, step) }
        #expect(IdleLineTests.dropped(c) == 1, "\(IdleLineTests.buffers(c))")
        #expect(h.log.contains("dropping a watcher (uid \(getuid()))"))
        #expect(!h.log.contains("unfinished line got no byte"))
        line.send(#""}}"# + "\n")
        #expect(line.readLine()?["id"] == 9, "the line was not closed")
        withExtendedLifetime(watcher) {}
    }
}
#endif
