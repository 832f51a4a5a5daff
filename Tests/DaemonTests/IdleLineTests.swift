// A connection read on in its unfinished line past its uid's share or the total keeps that
// turn only while its line grows: one whose line got no byte for a second passes it to the
// next of its uid's connections waiting (assetd(8), LIMITS). And over the total, lines
// counted, connections read whose unfinished line got no byte for a second are closed, the
// largest line first, until under it. Before, a client that hung mid-line held its uid's
// turn for as long as it stayed open, so no other line of the uid past the bounds ended;
// and 1,016 uids with one idle line each held about 1 GiB whatever the total.

import AssetClient
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct IdleLineTests {
    static func buffers(_ c: ControlClient) -> JSONValue { (try? c.call("stats")["buffers"]) ?? .null }
    static func input(_ c: ControlClient) -> Int { Int(Self.buffers(c)["input_bytes"]?.intValue ?? -1) }
    static func dropped(_ c: ControlClient) -> Int { Int(Self.buffers(c)["dropped_connections"]?.intValue ?? -1) }

    /// Lets the daemon's stall epoch advance once, and waits until it has.
    static func step(_ h: DaemonHarness, _ file: String) {
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        #expect(eventually { !h.exists(file) }, "the epoch advanced")
    }

    @Test(
        "a connection whose line stalls passes its uid's turn: another line of the uid ends",
        .enabled(if: ManyUsers.canRun, "needs root to connect as another user"))
    func stalledLineGivesUpTheTurn() throws {
        // 3 MB of one user's lines, over its 2 MiB share and under the 4 MiB total: one of
        // its connections is read on, the others wait. None of these lines ever ends.
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"", start: false)
        let stepFile = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": stepFile]
        try h.start()
        let c = try h.client(timeout: 60)
        let hung = try ManyUsers.start(h, fifo: h.dir + "/never", mode: "partial", ["\(Nobody.uid):3:1000000"])
        defer { hung.stop() }
        #expect(hung.waitForLine { $0 == "connected" }, "\(hung.output)")
        _ = UnfinishedLineTests.settled(c, hung, connections: 3)

        // A fourth connection of that user sends a line in two parts: it waits its turn.
        let fifo = h.dir + "/end-line"
        let late = try ManyUsers.start(h, fifo: fifo, mode: "partial", ["\(Nobody.uid):1:200000"])
        defer { late.stop() }
        #expect(late.waitForLine { $0 == "connected" }, "\(late.output)")
        #expect(
            eventually {
                Int(Self.buffers(c)["paused_connections"]?.intValue ?? 0) + ManyUsers.count(hung, "sent")
                    + ManyUsers.count(late, "sent") >= 4
            }, "\(Self.buffers(c))")
        ManyUsers.finish(fifo: fifo)

        // Each second in which the reader's line got no byte, the turn passes on: the stalled
        // lines go to the back, and the late line is read to its end and answered.
        for _ in 0..<12 where !late.output.contains("answer ok") {
            Self.step(h, stepFile)
            _ = Self.buffers(c)  // the turn passed at the step's tick; the late line is read after
        }
        #expect(late.waitForLine(timeout: 10) { $0 == "answer ok" }, "\(late.output) \(Self.buffers(c))")
        #expect(Self.buffers(c)["dropped_connections"] == 0, "under the total, none is closed")
    }

    @Test(
        "over the total, idle unfinished lines of many users are closed, largest first; a sending one is not",
        .enabled(if: ManyUsers.canRun, "needs root to connect as other users"))
    func idleLinesClosedOverTheTotal() throws {
        let total = 4 << 20
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"", start: false)
        let stepFile = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": stepFile]
        try h.start()
        let c = try h.client(timeout: 60)
        // Eight users, one connection and 1 MB (four) or 500 KB (four) of a line each, then
        // nothing: each is its uid's one line read on, 6 MB against a total of 4 MiB.
        let idle = try ManyUsers.start(
            h, fifo: h.dir + "/never", mode: "partial",
            (0..<8).map { "\(65520 + $0):1:\($0 < 4 ? 1_000_000 : 500_000)" })
        defer { idle.stop() }
        #expect(idle.waitForLine { $0 == "connected" }, "\(idle.output)")
        #expect(eventually { ManyUsers.count(idle, "sent") == 8 }, "\(idle.output)")

        // An admin's connection sends the longest line, a part each second: it is never idle.
        let sender = try RawConnection(path: h.socket)
        sender.setReceiveTimeout(60)
        let head = #"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":""#
        var sent = 0
        func send(_ n: Int) {
            let before = Self.input(c)
            let part = String(repeating: "a", count: sent == 0 ? n - head.utf8.count : n)
            sender.send(sent == 0 ? head + part : part)
            sent += n
            #expect(eventually { Self.input(c) >= before + n }, "read: \(Self.buffers(c))")
        }
        send(1_010_000)
        #expect(Self.input(c) > total, "\(Self.buffers(c))")

        // Two seconds pass, the sender sending in each: the idle lines are closed, the longest
        // first, until under the total (three of 1 MB: 7 MB held, 4 MB after), and the
        // sender's, the longest of all, is not. Any of 500 KB closed first would take four.
        for _ in 0..<2 {
            send(10_000)
            Self.step(h, stepFile)
        }
        let b = Self.buffers(c)
        let dropped = Int(b["dropped_connections"]?.intValue ?? 0)
        #expect(dropped == 3, "\(b)")
        #expect(Int(b["input_bytes"]?.intValue ?? .max) <= total, "\(b)")

        sender.send(#""}}"# + "\n")
        #expect(sender.readLine()?["result"] != nil, "the sender's line ended and was answered")
    }

    @Test(
        "over the total a line that grows a byte a second is idle: closed first, the longest, not the others",
        .enabled(if: ManyUsers.canRun, "needs root to connect as other uids"))
    func tricklingLineIsIdle() throws {
        let total = 4 << 20
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"", start: false)
        let stepFile = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": stepFile]
        try h.start()
        let c = try h.client(timeout: 60)
        // Four users with 1 MB of a line each, then nothing: 4 MB, under the total.
        let idle = try ManyUsers.start(
            h, fifo: h.dir + "/never", mode: "partial", (0..<4).map { "\(65520 + $0):1:1000000" })
        defer { idle.stop() }
        #expect(idle.waitForLine { $0 == "connected" }, "\(idle.output)")
        #expect(eventually { ManyUsers.count(idle, "sent") == 4 }, "\(idle.output)")

        // A longer line that then grows a byte a second: over the total, and never idle by bytes.
        let sender = try RawConnection(path: h.socket)
        sender.setReceiveTimeout(60)
        let head = #"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":""#
        var before = Self.input(c)
        sender.send(head + String(repeating: "a", count: 1_010_000 - head.utf8.count))
        #expect(eventually { Self.input(c) >= before + 1_010_000 }, "read: \(Self.buffers(c))")
        #expect(Self.input(c) > total, "\(Self.buffers(c))")
        for _ in 0..<3 {
            before = Self.input(c)
            sender.send("a")
            #expect(eventually { Self.input(c) >= before + 1 || Self.dropped(c) > 0 }, "\(Self.buffers(c))")
            Self.step(h, stepFile)
        }
        // The trickling line, the longest, went first and brought the total under: no other.
        #expect(eventually { Self.dropped(c) == 1 }, "\(Self.buffers(c))")
        #expect(Int(Self.buffers(c)["input_bytes"]?.intValue ?? .max) <= total, "\(Self.buffers(c))")
        // The sender's line ended now is not answered: its connection was the one closed.
        sender.send(#""}}"# + "\n")
        #expect(sender.readLine()?["result"] == nil, "the trickling sender was closed")
    }
}
#endif
