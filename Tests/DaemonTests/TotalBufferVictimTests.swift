// Over control.total_buffer_bytes the daemon drops a connection that does not take its
// replies (assetd(8), LIMITS). Replies of the current loop turn that were never offered to
// the kernel are no sign of that: a client that reads everything must never be the one
// dropped, however many replies one turn made for it and for everyone else.

import AssetClient
import Foundation
import Testing

@Suite struct TotalBufferVictimTests {
    static func get(_ id: Int, _ collection: String) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"object.get","params":{"collection":"\#(collection)","key":"x"}}"#
            + "\n"
    }

    /// What the kernel lets a Unix socket hold unread (the daemon's sockets keep the default).
    static let socketBuffer: Int = {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return 212_992 }
        defer { for fd in fds { close(fd) } }
        var size: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, &length)
        return Int(size)
    }()

    /// The size of `big/x`'s value: three replies fit in a reader's socket, two are over
    /// the 64 KiB bound.
    static var bigValue: Int { min(40_000, socketBuffer / 4) }

    /// `count` connections, each sent three gets of `big/x` while the daemon is stopped: it
    /// finds them all in one poll phase, and each reader's first replies are made in that turn.
    static func readersInOneTurn(
        _ h: DaemonHarness, _ c: ControlClient, count: Int, first: String = ""
    ) throws -> [RawConnection] {
        let before = try c.call("stats")["connections"]?.intValue ?? 0
        let readers = try (0..<count).map { _ in try RawConnection(path: h.socket) }
        for r in readers { r.setReceiveTimeout(60) }
        // Accepted before the stop: a connection still in the listen queue would be read later.
        #expect(try eventually { try c.call("stats")["connections"]?.intValue == before + Int64(count) })
        let pid = try #require(h.process?.processIdentifier)
        kill(pid, SIGSTOP)
        for r in readers { r.send(first + (0..<3).map { get($0, "big") }.joined()) }
        kill(pid, SIGCONT)
        return readers
    }

    /// Reads the three replies each reader is owed, in order.
    static func expectAllReplies(_ readers: [RawConnection], sourceLocation: SourceLocation = #_sourceLocation) {
        for (n, r) in readers.enumerated() {
            var ids = [Int64]()
            for _ in 0..<3 {
                guard let reply = r.readLine() else { break }
                #expect(reply["error"] == nil, "\(reply.serialized())", sourceLocation: sourceLocation)
                ids.append(reply["id"]?.intValue ?? -1)
            }
            #expect(ids == [0, 1, 2], "reader \(n)", sourceLocation: sourceLocation)
        }
    }

    /// Gets read in one poll phase, or run in one callback after a put each: the group
    /// commit answers every put at once, and each connection's gets then run.
    @Test(
        "one turn's replies not yet written exceed the total bound by at most one connection's",
        arguments: [false, true])
    func unwrittenRepliesStayNearTheTotal(afterPut: Bool) throws {
        let h = try DaemonHarness(
            controlSection: "connection_output_bytes = \"64KiB\"\ntotal_buffer_bytes = \"256KiB\"")
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "y", count: Self.bigValue)))
        let put = #"{"jsonrpc":"2.0","method":"object.put","params":{"collection":"p","key":"k","value":1}}"# + "\n"
        let readers = try Self.readersInOneTurn(h, c, count: 20, first: afterPut ? put : "")
        Self.expectAllReplies(readers)
        let b = try ConnectionMemoryTests.buffers(c)
        // The bound, one connection's replies (its own bound and the reply that crossed it),
        // and every reader's requests; 20 readers' first turn together are 1.6 MB.
        let most = Int64(256 * 1024 + 64 * 1024 + Self.bigValue + 1_000 + 20 * 3 * 300)
        #expect((b["peak_bytes"]?.intValue ?? .max) <= most, "\(b)")
        #expect(b["dropped_connections"] == 0)
    }

    @Test("over the total bound only connections that stay behind are dropped; prompt readers get every reply")
    func onlyTheNonReadersAreDropped() throws {
        let h = try DaemonHarness(
            controlSection: "connection_output_bytes = \"64KiB\"\ntotal_buffer_bytes = \"256KiB\"")
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "y", count: Self.bigValue)))
        try c.putObject("small", "x", .string(String(repeating: "s", count: 2_000)))
        // Five that never read: each fills its socket and then its 64 KiB bound, together
        // over the total, and they stay over it after the readers are done.
        let gets = (Self.socketBuffer + 128 * 1024) / 2_000
        let stalled = try (0..<5).map { _ in try RawConnection(path: h.socket) }
        for s in stalled { s.send((0..<gets).map { Self.get($0, "small") }.joined()) }
        #expect(
            try eventually(timeout: 60) {
                let b = try ConnectionMemoryTests.buffers(c)
                // Or already dropping them: a busy machine may have let a second go by.
                return (b["paused_connections"] == 5 && (b["output_bytes"]?.intValue ?? 0) > 256 * 1024)
                    || (b["dropped_connections"]?.intValue ?? 0) > 0
            })
        let readers = try Self.readersInOneTurn(h, c, count: 20)
        Self.expectAllReplies(readers)
        #expect(
            try eventually(timeout: 60) {
                let b = try ConnectionMemoryTests.buffers(c)
                return (b["dropped_connections"]?.intValue ?? 0) >= 1
                    && (b["output_bytes"]?.intValue ?? .max) <= 256 * 1024
            })
        withExtendedLifetime(stalled) {}
    }
}
