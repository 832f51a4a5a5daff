// Over control.total_buffer_bytes only a connection whose refused bytes have stayed over its
// own bound for a second is dropped (assetd(8), LIMITS): bytes the kernel refused a moment
// ago, for a big reply or a watcher's events, say nothing about a client that reads. And a
// turn's events to many watchers do not wait in memory past the bound.

import AssetClient
import Foundation
import Testing

@Suite struct TotalBufferStallTests {
    static func get(_ collection: String) -> String {
        #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"\#(collection)","key":"x"}}"# + "\n"
    }

    @Test("connections that stay over their own bound are dropped over the total; a big reply's reader is not")
    func bigReplyReaderIsNotDropped() throws {
        let w = TotalBufferVictimTests.socketBuffer
        let bound = 8 * w
        let h = try DaemonHarness(
            controlSection:
                "connection_output_bytes = \(bound)\ntotal_buffer_bytes = \(bound)\nmax_request_bytes = \(4 * bound)")
        let c = try h.client(timeout: 60)
        // An attacker's reply fills its socket and leaves one and a half bounds as backlog; the
        // reader's leaves twice the bound, for a moment the largest backlog.
        try c.putObject("a", "x", .string(String(repeating: "a", count: w + 3 * bound / 2)))
        try c.putObject("r", "x", .string(String(repeating: "r", count: w + 2 * bound)))
        let attackers = try (0..<3).map { _ in try RawConnection(path: h.socket) }
        for a in attackers { a.send(Self.get("a")) }
        // Over the total (or already past it: a busy machine may have let a second go by).
        #expect(
            try eventually {
                let b = try ConnectionMemoryTests.buffers(c)
                return (b["output_bytes"]?.intValue ?? 0) > Int64(bound)
                    || (b["dropped_connections"]?.intValue ?? 0) > 0
            })
        let reader = try RawConnection(path: h.socket)
        reader.setReceiveTimeout(60)
        reader.send(Self.get("r"))
        let reply = reader.readLine()
        #expect(reply?["result"]?["value"]?.stringValue?.count == w + 2 * bound)
        // The attackers took nothing since: they are dropped until the rest is under the total.
        #expect(
            try eventually {
                let b = try ConnectionMemoryTests.buffers(c)
                return (b["dropped_connections"]?.intValue ?? 0) >= 1
                    && (b["output_bytes"]?.intValue ?? .max) <= Int64(bound)
            })
        #expect(try c.call("ping")["commit"] != nil)
        withExtendedLifetime(attackers) {}
    }

    @Test("a commit's events to many watchers wait in memory at most one watcher's past the total")
    func watcherEventsAreWrittenOverTheTotal() throws {
        let h = try DaemonHarness(
            controlSection: "connection_output_bytes = \"64KiB\"\ntotal_buffer_bytes = \"256KiB\"")
        let c = try h.client(timeout: 60)
        let watchers = try (0..<60).map { _ in try h.client(timeout: 60) }
        for w in watchers { try w.call("watch") }
        // One put on each of 60 connections, read in one poll phase: the group commit answers
        // them together, and every watcher gets every put's event (about 1 KB, for its key)
        // in that callback.
        let puts = 60
        let putters = try (0..<puts).map { _ in try RawConnection(path: h.socket) }
        for p in putters { p.setReceiveTimeout(60) }
        #expect(try eventually { try c.call("stats")["connections"]?.intValue == Int64(1 + 2 * puts) })
        let key = String(repeating: "k", count: 900)
        let pid = try #require(h.process?.processIdentifier)
        kill(pid, SIGSTOP)
        for (n, p) in putters.enumerated() {
            p.send(
                #"{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"p","key":"\#(key)\#(n)","value":1}}"#
                    + "\n")
        }
        kill(pid, SIGCONT)
        for p in putters { #expect(p.readLine()?["error"] == nil) }
        let b = try ConnectionMemoryTests.buffers(c)
        // The bound, the puts waiting to run, one watcher's bound and an event; the events of
        // one commit to all 60 watchers are over 60 KB, of all 60 puts 3.6 MB.
        let most = Int64(256 * 1024 + puts * 1_100 + 64 * 1024 + 1_100)
        #expect((b["peak_bytes"]?.intValue ?? .max) <= most, "\(b)")
    }

    @Test("a watcher that takes none of its events is dropped over the total, though events keep coming")
    func stalledWatcherIsDropped() throws {
        let h = try DaemonHarness(
            controlSection: "connection_output_bytes = \"64KiB\"\ntotal_buffer_bytes = \"256KiB\"")
        let c = try h.client(timeout: 60)
        let watcher = try RawConnection(path: h.socket)
        watcher.setReceiveTimeout(60)
        watcher.send(#"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n")
        #expect(watcher.readLine()?["result"]?["watching"] == true)
        // Events of about 1 KB each (their key), 50 at a time from a client that waits for
        // each answer (so holds nothing, and is read over the total too): they fill the
        // watcher's socket, then hold the total over by themselves, and keep coming after.
        // Each is queued behind a backlog that never shrinks: no sign of a reader.
        let key = String(repeating: "k", count: 900)
        let putter = try h.client(timeout: 60)
        var n = 0
        #expect(
            try eventually {
                for _ in 0..<50 {
                    try putter.putObject("p", key + String(n), 1)
                    n += 1
                }
                return try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 1
            })
        #expect(try (ConnectionMemoryTests.buffers(c)["peak_bytes"]?.intValue ?? 0) > 256 * 1024)
        #expect(watcher.isClosedByPeer())
    }
}
