// The parse gate lets in a line of a user with nothing running past the total, but only while
// what runs stays within one more total (assetd.toml(5), total_buffer_bytes); past that, such
// lines wait in order of arrival with the rest. Unbounded, 80 uids each sending one 420 KB
// line that parses to 8 MB took the daemon to 495 MiB against a total of 128 MiB. Debug
// builds hold a long ping's parse (ASSETD_DEBUG_HOLD_LONG_PARSE, making FILE.held-N) and
// show the gate's counts in `stats.debug` (ASSETD_DEBUG_STATS).

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct LoneParseBoundTests {
    @Test(
        "lines of many users with nothing running are let in up to twice the total, the rest in order",
        .enabled(if: ManyUsers.canRun, "needs root to connect as other users"))
    func manyLoneUsersWait() throws {
        // Each 300 KB line is let in for 1 MiB (the connection's bound): 4 fill the total, 4
        // more the total past it. 12 threads: 11 for clients, one left for `stats`.
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"4MiB\"\nconnection_input_bytes = \"1MiB\"",
            start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = [
            "ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "ASSETD_DEBUG_STATS": "1", "UV_THREADPOOL_SIZE": "12",
        ]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let debug = { (try? c.call("stats")["debug"]) ?? .null }
        let held = { (1...11).count { h.exists(hold + ".held-\($0)") } }

        // Ten users, one line each, nothing else running.
        let users = (0..<10).map { "\(70_000 + $0):1:300000" }
        let lines = try ManyUsers.start(h, fifo: h.dir + "/unused", mode: "lines", users)
        defer { lines.stop() }
        #expect(lines.waitForLine { $0 == "connected" }, "\(lines.output)")
        #expect(
            eventually { held() >= 8 && held() + Int(debug()["parses_waiting"]?.intValue ?? 0) == 10 },
            "\(held()) held, \(debug())")
        let d = debug()
        #expect((d["parses_running"]?.intValue ?? .max) <= (8 << 20) + 1024, "\(d)")
        #expect(d["parses_waiting"] == 2, "\(d)")

        // Another user's line waits behind them.
        let mine = try RawConnection(path: h.socket)
        mine.setReceiveTimeout(60)
        let text = String(repeating: "b", count: 300_000)
        mine.send(#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"\#(text)"}}"# + "\n")
        #expect(eventually { debug()["parses_waiting"] == 3 }, "\(debug())")

        try FileManager.default.removeItem(atPath: hold)
        #expect(lines.waitForLine { $0 == "done" }, "\(lines.output)")
        #expect(ManyUsers.count(lines, "answer ok") == 10, "\(lines.output)")
        #expect(mine.readLine()?["id"] == 5)
        #expect(debug()["parses_waiting"] == 0)
    }
}
#endif
