// A request line not yet ended counts against its uid's share of control.total_buffer_bytes
// and the total like anything else a connection holds (assetd.toml(5), [control]): past
// either, one connection of the uid at a time reads on in its line, the others wait. Unpaused,
// 250 connections of one uid each holding most of a 1 MiB line held 262 MB against a 64 MiB
// share, and four uids 8 times the total. Yet another user's line still gets in, a user over
// its share still ends all its lines, and a reader of another user is not dropped for a total
// that others' unfinished lines hold.

import AssetClient
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct UnfinishedLineTests {
    /// Another user than nobody, with no passwd entry and not an admin.
    static let otherUID: UInt32 = 65533
    /// And a third, the bystander.
    static let thirdUID: UInt32 = 65532
    /// Each attacking connection's line without its end: just under max_request_bytes.
    static let lineBytes = 1_000_000

    static func buffers(_ c: ControlClient) -> JSONValue { (try? c.call("stats")["buffers"]) ?? .null }

    /// Waits until each of `connections` sent all of its unfinished line or is paused: then
    /// the daemon reads no more of them. The buffers then.
    static func settled(_ c: ControlClient, _ p: BackgroundProcess, connections: Int) -> JSONValue {
        var b = JSONValue.null
        let quiet = eventually {
            b = Self.buffers(c)
            return Int(b["paused_connections"]?.intValue ?? 0) + ManyUsers.count(p, "sent") >= connections
        }
        #expect(quiet, "\(b) \(p.output)")
        return b
    }

    /// What a uid's unfinished lines may hold: its share, one more line (the connection that
    /// reads on), and a read of each of its connections that crossed the share meanwhile.
    static func most(total: Int, connections: Int) -> Int {
        total / 2 + lineBytes + connections * (64 << 10)
    }

    @Test(
        "one user's unfinished lines stop being read past its share, and all end once sent",
        .enabled(if: ManyUsers.canRun, "needs root to connect as another user"))
    func oneUsersLinesStopAtItsShare() throws {
        let total = 4 << 20
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"")
        let c = try h.client(timeout: 60)
        let fifo = h.dir + "/end-lines"
        // 8 MB of lines without their ends, against a share of 2 MiB.
        let lines = try ManyUsers.start(h, fifo: fifo, mode: "partial", ["\(Nobody.uid):8:\(Self.lineBytes)"])
        defer { lines.stop() }
        #expect(lines.waitForLine { $0 == "connected" }, "\(lines.output)")
        let b = Self.settled(c, lines, connections: 8)
        let held = Int(b["input_bytes"]?.intValue ?? .max)
        #expect(held <= Self.most(total: total, connections: 8), "\(b)")

        // The user's connections, paused, read on one at a time: each line ends.
        ManyUsers.finish(fifo: fifo)
        #expect(lines.waitForLine { $0 == "done" }, "\(lines.output)")
        #expect(ManyUsers.count(lines, "answer ok") == 8, "\(lines.output)")
        #expect(eventually { Self.buffers(c)["input_bytes"] == 0 }, "\(Self.buffers(c))")
    }

    @Test(
        "two users' unfinished lines over the total: a third user's line gets in, a slow reader is not dropped",
        .enabled(if: ManyUsers.canRun, "needs root to connect as other users"))
    func othersLinesGetInOverTheTotal() throws {
        let total = 4 << 20
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"\nconnection_output_bytes = \"64KiB\"",
            start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // none is behind till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        // An admin's reader asks for a 600 KB value and reads none of it yet: over its own
        // bound of 64 KiB, and behind once two seconds have passed.
        let value = String(repeating: "y", count: 600_000)
        try c.putObject("big", "x", .string(value))
        let reader = try RawConnection(path: h.socket)
        reader.setReceiveTimeout(60)
        reader.send(#"{"jsonrpc":"2.0","id":7,"method":"object.get","params":{"collection":"big","key":"x"}}"# + "\n")
        #expect(eventually { (Self.buffers(c)["output_bytes"]?.intValue ?? 0) > 64 << 10 }, "\(Self.buffers(c))")

        // Two users' 16 MB of lines without their ends: each stops at about its share, and
        // together they hold the total.
        let fifo = h.dir + "/end-lines"
        let lines = try ManyUsers.start(
            h, fifo: fifo, mode: "partial",
            ["\(Nobody.uid):8:\(Self.lineBytes)", "\(Self.otherUID):8:\(Self.lineBytes)"])
        defer { lines.stop() }
        #expect(lines.waitForLine { $0 == "connected" }, "\(lines.output)")
        let b = Self.settled(c, lines, connections: 16)
        let held = Int(b["input_bytes"]?.intValue ?? .max)
        #expect(held <= 2 * Self.most(total: total, connections: 8), "\(b)")
        let output = Int(b["output_bytes"]?.intValue ?? 0)
        #expect(held + output > total, "the lines hold the total with the reader's reply: \(b)")

        // Two seconds pass: the reader is behind, and the total is over, but by lines not
        // ended, which dropping it would not free. Lines read that got no byte meanwhile are
        // closed (IdleLineTests); the reader is not: it takes its whole reply below.
        for _ in 0..<2 {
            #expect(FileManager.default.createFile(atPath: step, contents: nil))
            #expect(eventually { !h.exists(step) }, "the epoch advanced")
        }

        // A third user's line, sent in two parts, is read whole and answered.
        let fifo3 = h.dir + "/end-third"
        let third = try ManyUsers.start(h, fifo: fifo3, mode: "partial", ["\(Self.thirdUID):1:600000"])
        defer { third.stop() }
        #expect(third.waitForLine { $0 == "sent" }, "\(third.output) \(Self.buffers(c))")
        ManyUsers.finish(fifo: fifo3)
        #expect(third.waitForLine { $0 == "done" }, "\(third.output)")
        #expect(third.output.contains("answer ok"), "\(third.output)")

        // The reader takes its whole reply.
        let reply = reader.readLine()
        #expect(reply?["result"]?["value"]?.stringValue == value)
    }
}
#endif
