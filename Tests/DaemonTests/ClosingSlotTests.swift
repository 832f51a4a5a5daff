// A connection the daemon closes keeps its slot until its last replies are taken or its 5 s
// are up (assetd(8), LIMITS): reconnecting must not let one client hold any number of closing
// connections, each with its replies in memory.

import AssetClient
import Foundation
import Testing

@Suite struct ClosingSlotTests {
    @Test("a connection closed for a too-long line holds its slot until its replies are taken")
    func closingConnectionKeepsItsSlot() throws {
        // Replies four times what the socket takes: most wait in the daemon when the line
        // ends the connection. The line just over the limit fits the socket (the daemon stops
        // reading at it). The output bound is above all the replies, so the line is read.
        let w = TotalBufferVictimTests.socketBuffer
        let h = try DaemonHarness(
            controlSection: "max_connections = 2\nmax_request_bytes = \(w)\nconnection_output_bytes = \(16 * w)")
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "b", count: w / 2)))
        var closing: RawConnection? = try RawConnection(path: h.socket)
        let get = #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"big","key":"x"}}"# + "\n"
        closing?.send(String(repeating: get, count: 8) + String(repeating: "x", count: w + 100) + "\n")
        // Its session is gone (closed, its replies still waiting): only `c` is counted.
        #expect(try eventually { try c.call("stats")["connections"] == 1 })
        do {  // `late` closes at the end of this block
            let late = try RawConnection(path: h.socket)
            late.setReceiveTimeout(60)
            late.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n")
            let answer = late.readLine()
            let refused = answer?["error"]?["message"]?.stringValue?.contains("too many connections") == true
            // Unless the closing one was already closed at its deadline (a very slow machine).
            let reaped = h.log.contains("closing a connection that did not take its last replies")
            #expect(refused || reaped, "\(answer?.serialized() ?? "no answer")")
        }
        // Once it is gone, its slot is free again.
        closing = nil  // closes the socket: the daemon's write fails and the flush ends
        #expect(
            try eventually {
                let next = try RawConnection(path: h.socket)
                next.setReceiveTimeout(60)
                next.send(#"{"jsonrpc":"2.0","id":3,"method":"ping"}"# + "\n")
                return next.readLine()?["result"] != nil
            })
    }
}

@Suite struct ClosingBytesTests {
    /// A connection that sends eight gets of `big/x` (half a socket each) and a line just
    /// over the limit, and reads nothing: it is closed with most of its replies waiting.
    static func closingWithReplies(_ h: DaemonHarness, _ c: ControlClient) throws -> RawConnection {
        let w = TotalBufferVictimTests.socketBuffer
        try c.putObject("big", "x", .string(String(repeating: "b", count: w / 2)))
        let closing = try RawConnection(path: h.socket)
        let get = #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"big","key":"x"}}"# + "\n"
        closing.send(String(repeating: get, count: 8) + String(repeating: "x", count: w + 100) + "\n")
        return closing
    }

    @Test("a closing connection is counted in stats, and its last replies in the buffers")
    func closingConnectionIsCounted() throws {
        let w = TotalBufferVictimTests.socketBuffer
        let h = try DaemonHarness(controlSection: "max_request_bytes = \(w)\nconnection_output_bytes = \(16 * w)")
        let c = try h.client(timeout: 60)
        let closing = try Self.closingWithReplies(h, c)
        #expect(try eventually { try c.call("stats")["connections"] == 1 })
        let stats = try c.call("stats")
        // Unless it was already closed at its deadline (a very slow machine).
        if !h.log.contains("closing a connection that did not take its last replies") {
            #expect(stats["closing_connections"] == 1, "\(stats.serialized())")
            // Eight replies of half a socket, of which the socket holds at most two.
            #expect((stats["buffers"]?["output_bytes"]?.intValue ?? 0) >= Int64(2 * w), "\(stats.serialized())")
        }
        withExtendedLifetime(closing) {}
    }
}
