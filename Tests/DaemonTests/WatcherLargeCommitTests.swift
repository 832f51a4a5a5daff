// A watcher is given its events as it takes them, a slice at a time, the rest waiting shared
// by all watchers (assetd(8), CONTROL PROTOCOL, Events and Limits): one commit of more than
// 16 MiB of events drops no watcher that reads, the loop answers others between slices, and
// watchers that take nothing hold a slice each and the events once, dropped once behind.

import AssetClient
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct WatcherLargeCommitTests {
    static let watch = #"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n"

    /// A transact line of `count` puts to `collection`, keys `key` + index.
    static func transact(_ collection: String, _ key: String, from: Int = 0, _ count: Int) -> String {
        var ops = [String]()
        ops.reserveCapacity(count)
        for i in from..<from + count {
            ops.append(
                #"{"method":"object.put","params":{"collection":"\#(collection)","key":"\#(key)\#(i)","value":1}}"#)
        }
        return #"{"jsonrpc":"2.0","id":7,"method":"transact","params":{"ops":["# + ops.joined(separator: ",")
            + "]}}\n"
    }

    @Test("a watcher that reads takes a commit of more than 16 MiB of events whole; others are answered meanwhile")
    func readerTakesALargeCommit() throws {
        let h = try DaemonHarness(
            controlSection:
                "max_request_bytes = \"32MiB\"\nconnection_input_bytes = \"1GiB\"\nmax_reply_bytes = \"64MiB\"",
            start: false)
        h.environment = ["ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let reader = try RawConnection(path: h.socket)
        reader.setReceiveTimeout(120)
        reader.send(Self.watch)
        #expect(reader.readLine()?["result"]?["watching"] == true)
        let bystander = try h.client(timeout: 120)
        // 9,000 events of about 2 KB (the longest collection, a long key): 18 MB in one commit.
        let collection = String(repeating: "c", count: 1024)
        let key = String(repeating: "k", count: 1000)
        let count = 9000
        let writer = try RawConnection(path: h.socket)
        writer.setReceiveTimeout(120)
        writer.send(Self.transact(collection, key, count))
        let first = reader.readLine()
        #expect(first?["params"]?["key"]?.stringValue == key + "0", "the watcher was not dropped")
        // The reader holds off: the rest waits for it, unmade, and the loop answers others.
        #expect(try bystander.call("ping")["commit"] != nil)
        let rendered = try bystander.call("stats")["debug"]?["event_lines_rendered"]?.intValue ?? -1
        #expect(rendered > 0 && rendered < Int64(count), "rendered \(rendered) of \(count) while the reader waited")
        var taken = first == nil ? 0 : 1
        while taken < count, let line = reader.readRawLine() {
            let event = try JSONValue.parse(String(decoding: line, as: UTF8.self))
            #expect(event["params"]?["key"]?.stringValue == key + String(taken))
            taken += 1
        }
        #expect(taken == count)
        #expect(writer.readLine()?["result"]?["commit"] != nil)
        reader.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n")
        #expect(reader.readLine()?["result"]?["commit"] != nil)
        let buffers = try bystander.call("stats")["buffers"]
        #expect(buffers?["dropped_connections"] == 0)
    }

    @Test("watchers that take nothing hold a slice each and the events once, and are dropped once behind")
    func stalledWatchersStayBounded() throws {
        let h = try DaemonHarness(
            controlSection: "total_buffer_bytes = \"4MiB\"\nmax_request_bytes = \"8MiB\"", start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // no watcher is behind till stepped
        try h.start()
        let c = try h.client(timeout: 120)
        let watchers = try (0..<16).map { _ in try RawConnection(path: h.socket) }
        for w in watchers {
            w.setReceiveTimeout(60)
            w.send(Self.watch)
            #expect(w.readLine()?["result"]?["watching"] == true)
        }
        // Four commits of 1,000 events of about 1.1 KB: 4.4 MB for each watcher, which takes
        // none. Copied to each, they held 16 x 4.4 MB; given a slice (256 KiB) each, they hold
        // 4 MiB of copies and the 4.4 MB of events once, and the writer's request.
        let key = String(repeating: "k", count: 1000)
        let writer = try RawConnection(path: h.socket)
        writer.setReceiveTimeout(120)
        for t in 0..<4 {
            writer.send(Self.transact("p", key, from: 1000 * t, 1000))
            #expect(writer.readLine()?["result"]?["commit"] != nil)
        }
        let peak = try ConnectionMemoryTests.buffers(c)["peak_bytes"]?.intValue ?? .max
        let most = 16 * (256 * 1024 + 1100) + 4 * 1000 * 1200 + 8 << 20
        #expect(peak <= Int64(most), "peak \(peak)")
        #expect(try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 0)
        // Over the total, behind for a second: dropped, and what they held freed.
        for _ in 0..<2 {
            #expect(FileManager.default.createFile(atPath: step, contents: nil))
            #expect(eventually { !h.exists(step) }, "the epoch advanced")
        }
        #expect(
            try eventually {
                let b = try ConnectionMemoryTests.buffers(c)
                return b["dropped_connections"] == 16 && b["output_bytes"] == 0
            })
        for w in watchers { #expect(w.isClosedByPeer()) }
        #expect(try c.call("ping")["commit"] != nil)
    }

    @Test("a half-closed watcher whose filter passes over its last events is closed once it took the rest")
    func halfClosedFilteredWatcherCloses() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = \"8MiB\"")
        let watcher = try RawConnection(path: h.socket)
        watcher.setReceiveTimeout(30)
        watcher.send(#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"collections":["a"]}}"# + "\n")
        #expect(watcher.readLine()?["result"]?["watching"] == true)
        let writer = try RawConnection(path: h.socket)
        writer.setReceiveTimeout(120)
        // 1,000 events it takes, more than a slice: the rest waits for it to read. Then one it
        // takes and 5,000 it passes over, more than are looked at in a turn, of one commit (one
        // with none it takes is not queued for it): the last turns give it nothing.
        let key = String(repeating: "k", count: 1000)
        writer.send(Self.transact("a", key, 1000))
        #expect(writer.readLine()?["result"]?["commit"] != nil)
        let first = #"{"method":"object.put","params":{"collection":"a","key":"first","value":1}},"#
        writer.send(Self.transact("b", "k", 5000).replacingOccurrences(of: #""ops":["#, with: #""ops":["# + first))
        #expect(writer.readLine()?["result"]?["commit"] != nil)
        watcher.shutdownWrite()
        var taken = 0
        while taken < 1001, watcher.readRawLine() != nil { taken += 1 }
        #expect(taken == 1001)
        #expect(watcher.isClosedByPeer(), "the half-closed watcher was closed once it had taken everything")
    }
}
#endif
