// A connection read on in its unfinished line past its uid's share or the total keeps that
// turn only while its line grows: one whose line got no byte for a second passes it to the
// next of its uid's connections waiting (assetd(8), LIMITS). Before, a client that hung
// mid-line held its uid's turn for as long as it stayed open, so no other line of the uid
// past the bounds ended.

import AssetClient
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct IdleLineTests {
    static func buffers(_ c: ControlClient) -> JSONValue { (try? c.call("stats")["buffers"]) ?? .null }
    static func input(_ c: ControlClient) -> Int { Int(Self.buffers(c)["input_bytes"]?.intValue ?? -1) }

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
}
#endif
