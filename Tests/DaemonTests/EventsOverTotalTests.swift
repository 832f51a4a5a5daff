// Over control.total_buffer_bytes with watchers' events holding most of it, the daemon drops
// watchers behind, never a reader of plain replies (assetd(8), LIMITS): a watcher can watch
// again and read the state anew, and a reply lost is a request failed. Before, the connection
// behind with the most bytes waiting went first, and one big reply weighs more than what any
// watcher has refused (a slice at most): three big deletes' events, none of the reader's
// doing, dropped an admin reading a query's reply.

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
            try eventually { (IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? 0) > 500_000 },
            "the reply waits in the daemon")
        // A watcher that reads nothing after its watch's reply: given a slice of the
        // transact's events, it holds them all (none behind them: no 16 MiB rule).
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch")
        try c.call("transact", WatcherDropOrderTests.puts("fan", from: 0, count: 2000))
        for _ in 0..<2 { IdleLineTests.step(h, step) }
        #expect(IdleLineTests.dropped(c) == 1, "\(IdleLineTests.buffers(c))")
        #expect(h.log.contains("dropping a watcher (uid \(getuid()))"))
        #expect(!h.log.contains("does not read its replies"))
        let reply = try #require(reader.readLine(), "the reader was not dropped")
        #expect(reply["id"] == 7)
        #expect(reply["result"]?["value"]?.stringValue == value)
        #expect((IdleLineTests.buffers(c)["output_bytes"]?.intValue ?? .max) < 1 << 20, "the events were freed")
        withExtendedLifetime(watcher) {}
    }
}
#endif
