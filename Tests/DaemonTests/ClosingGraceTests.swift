// Over control.total_buffer_bytes a connection the daemon closed is dropped only once the
// daemon could write none of its last replies to it for a second (assetd(8), CONTROL PROTOCOL,
// Framing), like an open one behind: one that is reading gets them all, the error that says
// why it was closed included.

import AssetClient
import Foundation
import JSON
import Testing

@Suite struct ClosingGraceTests {
    static var w: Int { TotalBufferVictimTests.socketBuffer }

    /// A daemon whose total is four sockets; one connection's bound is far above anything here.
    static func daemon() throws -> DaemonHarness {
        try DaemonHarness(
            controlSection:
                "max_request_bytes = \(w)\nconnection_output_bytes = \(16 * w)\ntotal_buffer_bytes = \(4 * w)")
    }

    /// A connection closed with eight replies of half a socket, three sockets' worth waiting in
    /// the daemon; then one that sends twelve gets and reads none, five sockets' worth: over
    /// the total by itself and never behind (under its own bound), it holds the total over.
    static func closingOverTheTotal(_ h: DaemonHarness, _ c: ControlClient) throws -> (RawConnection, RawConnection) {
        let closing = try ClosingBytesTests.closingWithReplies(h, c)
        closing.setReceiveTimeout(60)
        #expect(try eventually { try c.call("stats")["closing_connections"] == 1 })
        let stalled = try RawConnection(path: h.socket)
        stalled.setReceiveTimeout(60)
        stalled.send(String(repeating: TotalBufferVictimTests.get(2, "big"), count: 12))
        #expect(try eventually { try ConnectionMemoryTests.buffers(c)["paused_connections"] == 1 })
        return (closing, stalled)
    }

    /// Reads the stalled connection's twelve replies: then nothing is held, closing or open.
    static func expectAllReleased(_ stalled: RawConnection, _ c: ControlClient) throws {
        for _ in 0..<12 { #expect(stalled.readLine()?["result"]?["value"]?.stringValue?.count == w / 2) }
        #expect(
            try eventually {
                let s = try c.call("stats")
                return s["closing_connections"] == 0 && s["buffers"]?["output_bytes"] == 0
                    && s["buffers"]?["paused_connections"] == 0
            })
    }

    /// The first line `closing` reads, and how long after `t0` it came: the daemon closes it
    /// after `t0` and drops it a second later at the earliest, so under a second it was not.
    static func firstLine(_ closing: RawConnection, since t0: Date) -> (JSONValue?, Double) {
        let line = closing.readLine()
        return (line, Date().timeIntervalSince(t0))
    }

    @Test("a closing connection that takes its replies while the total is over gets them all")
    func readingClosingConnectionIsKept() throws {
        let h = try Self.daemon()
        let c = try h.client(timeout: 60)
        let t0 = Date()
        let (closing, stalled) = try Self.closingOverTheTotal(h, c)
        let (first, readIn) = Self.firstLine(closing, since: t0)
        var lines = first.map { [$0] } ?? []
        while first != nil, let line = closing.readLine() { lines.append(line) }
        // Unless this test took a second or more to start reading (a very slow machine).
        if readIn < 1.0 {
            #expect(lines.count == 9, "\(lines.count) lines")
            #expect(lines.prefix(8).allSatisfy { $0["result"]?["value"]?.stringValue?.count == Self.w / 2 })
            #expect(lines.last?["error"]?["data"]?["code"] == "request_too_large")
            #expect(try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 0)
        }
        try Self.expectAllReleased(stalled, c)
    }

    @Test("a closing connection that stops taking its replies is dropped after a second, its bytes freed")
    func stalledClosingConnectionIsDropped() throws {
        let h = try Self.daemon()
        let c = try h.client(timeout: 60)
        let t0 = Date()
        let (closing, stalled) = try Self.closingOverTheTotal(h, c)
        let (first, readIn) = Self.firstLine(closing, since: t0)
        // More than its socket held when it was closed: it was not dropped at once. Unless
        // this test took a second or more to start reading (then it may rightly have been).
        if readIn < 1.0 {
            #expect(first?["result"]?["value"]?.stringValue?.count == Self.w / 2)
            for _ in 0..<4 { #expect(closing.readLine()?["result"]?["value"]?.stringValue?.count == Self.w / 2) }
        }
        // It stops taking: dropped by tR + 2 s, before its deadline reap (t0 + 5 s at the
        // earliest) if tR is under t0 + 2.5 s; later, the reap may come first.
        let tR = Date().timeIntervalSince(t0)
        let reaped = { h.log.contains("closing a connection that did not take its last replies") }
        var s = JSONValue.null
        #expect(
            try eventually {
                s = try c.call("stats")
                return s["buffers"]?["dropped_connections"] == 1 || reaped()
            })
        if tR < 2.5 || s["buffers"]?["dropped_connections"] == 1 {
            #expect(s["closing_connections"] == 0 && s["buffers"]?["dropped_connections"] == 1, "\(s.serialized())")
        }
        // What was in its socket, and no more: the rest was dropped with it.
        var rest = [JSONValue]()
        while let line = closing.readLine() { rest.append(line) }
        #expect(rest.count < 3 && rest.allSatisfy { $0["error"] == nil }, "\(rest.count) more lines")
        try Self.expectAllReleased(stalled, c)
    }
}

#if DEBUG
/// A session closing hands its bytes to the closing streams' count in one step: released
/// first, the total dipped under the bound for a moment, and connections paused for the
/// total were read again though the bytes were still held.
@Suite struct ClosingHandoverTests {
    /// Bytes `connection` sent that the daemon has not read yet.
    static func unread(_ connection: RawConnection) -> Int32 {
        var n: Int32 = 0
        return ioctl(connection.fd, UInt(TIOCOUTQ), &n) == 0 ? n : -1
    }

    @Test("a connection paused over the total stays paused while a closing one keeps it over")
    func pausedConnectionStaysPaused() throws {
        // Replies of a quarter socket, u. The closing connection leaves 4u waiting (8u, less
        // the socket) and reads a line of a socket before it is closed, under the total of
        // 10.5u; the paused one leaves 8u (12u, less its socket), together over it, alone not.
        let w = TotalBufferVictimTests.socketBuffer
        let h = try DaemonHarness(
            controlSection:
                "max_request_bytes = \(w)\nconnection_output_bytes = \(16 * w)\ntotal_buffer_bytes = \(21 * w / 8)",
            start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold]
        try h.start()
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "b", count: w / 4)))
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // Eight gets, then a long line held in its parse, then a line over the limit: it is
        // read while the long one waits, and is answered (closing the connection) after it.
        let closing = try RawConnection(path: h.socket)
        closing.send(
            String(repeating: TotalBufferVictimTests.get(1, "big"), count: 8)
                + LongLineTests.widePing(id: 2, members: 8_000))
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        closing.send(String(repeating: "x", count: w + 100) + "\n")
        // The held one counts by its line (and 128 bytes) until it is answered.
        let held = Int64(LongLineTests.widePing(id: 2, members: 8_000).utf8.count - 1 + 128)
        #expect(
            try eventually {
                try Self.unread(closing) == 0 && ConnectionMemoryTests.buffers(c)["input_bytes"]?.intValue == held
            }, "the line over the limit was read")
        let paused = try RawConnection(path: h.socket)
        paused.send(String(repeating: TotalBufferVictimTests.get(3, "big"), count: 12))
        #expect(try eventually { try ConnectionMemoryTests.buffers(c)["paused_connections"] == 1 })
        try FileManager.default.removeItem(atPath: hold)
        var s = JSONValue.null
        #expect(
            try eventually {
                s = try c.call("stats")
                return s["closing_connections"] == 1 || s["buffers"]?["dropped_connections"] != 0
            })
        // Unless the closing one was already dropped, having taken nothing for a second.
        if s["buffers"]?["dropped_connections"] == 0 {
            #expect(s["buffers"]?["paused_connections"] == 1, "\(s.serialized())")
        }
        // It takes nothing: it is dropped, and the paused one is read again.
        #expect(
            try eventually {
                let b = try ConnectionMemoryTests.buffers(c)
                return b["dropped_connections"] == 1 && b["paused_connections"] == 0
            })
        #expect(try c.call("stats")["closing_connections"] == 0)
        paused.setReceiveTimeout(60)
        for _ in 0..<12 { #expect(paused.readLine()?["result"]?["value"]?.stringValue?.count == w / 4) }
        #expect(try eventually { try ConnectionMemoryTests.buffers(c)["output_bytes"] == 0 })
        withExtendedLifetime(closing) {}
    }
}

/// A closing connection is behind after a second in which the daemon could write it nothing,
/// counted from when it last took bytes, not from when it was closed.
@Suite struct ClosingSlowReaderTests {
    @Test("a closing connection that keeps taking its replies, slowly, keeps them past a second")
    func slowReaderKeepsItsReplies() throws {
        let w = ClosingGraceTests.w
        let h = try DaemonHarness(
            controlSection:
                "max_request_bytes = \(w)\nconnection_output_bytes = \(16 * w)\ntotal_buffer_bytes = \(4 * w)",
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        let t0 = Date()
        let (closing, stalled) = try ClosingGraceTests.closingOverTheTotal(h, c)
        let output = { try ConnectionMemoryTests.buffers(c)["output_bytes"]?.intValue ?? -1 }
        let gone = { try c.call("stats")["closing_connections"] == 0 }
        var lines = [JSONValue]()
        // In each of three epochs it takes two replies (a socket: the daemon can write to it
        // again) and the daemon writes it more, before the epoch is stepped: it never goes a
        // whole epoch without taking bytes. Closed in the first, it would be behind in the third.
        for _ in 0..<3 {
            let held = try output()
            for _ in 0..<2 { if let line = closing.readLine() { lines.append(line) } }
            #expect(try eventually { try output() < held || gone() }, "the daemon wrote it more")
            #expect(FileManager.default.createFile(atPath: step, contents: nil))
            #expect(eventually { !h.exists(step) }, "the epoch advanced")
        }
        while let line = closing.readLine() { lines.append(line) }
        // The deadline reap (5 s after it was closed, after t0) is no drop, but takes the rest.
        #expect(try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 0)
        if Date().timeIntervalSince(t0) < 5.0 {
            #expect(lines.count == 9, "\(lines.count) lines")
            #expect(lines.prefix(8).allSatisfy { $0["result"]?["value"]?.stringValue?.count == w / 2 })
            #expect(lines.last?["error"]?["data"]?["code"] == "request_too_large")
        }
        try ClosingGraceTests.expectAllReleased(stalled, c)
    }
}
#endif
