// A watcher that takes none of its events for a second while more than 16 MiB of them wait
// behind those it is being given is dropped (assetd(8), LIMITS), whatever the total: counted
// in stats like the connections dropped over the total, while the other watchers get every
// event and the daemon answers.

import AssetClient
import AssetStore
import Foundation
import Testing

#if DEBUG
@Suite struct WatcherBacklogTests {
    @Test("a watcher past 16 MiB of untaken events is dropped and counted; a watcher that reads gets them all")
    func stalledWatcherIsDropped() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = \"8MiB\"", start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        let stalled = try RawConnection(path: h.socket)
        stalled.setReceiveTimeout(60)
        stalled.send(#"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n")
        #expect(stalled.readLine()?["result"]?["watching"] == true)
        let reader = try h.client(timeout: 60)
        try reader.call("watch", ["types": ["object.put"]])
        // Events of about 2 KB (the longest collection and key), weighing about 4.3 KB (the
        // line and what it is made from), 2,000 a transact: over 16 MiB wait behind the
        // first's after three. The reader takes each transact's before the
        // next, so never has any waiting. The stalled watcher took none of the first's slice
        // before the epoch was stepped twice: behind from then on.
        let collection = String(repeating: "c", count: 1024)
        let key = String(repeating: "k", count: 1000)
        let batch = 2000
        var sent = 0
        var taken = 0
        var dropped: Int64 = 0
        for _ in 0..<12 where dropped == 0 {
            let ops: [JSONValue] = (sent..<sent + batch).map { i in
                [
                    "method": "object.put",
                    "params": ["collection": .string(collection), "key": .string(key + String(i)), "value": 1],
                ]
            }
            try c.call("transact", ["ops": .array(ops)])
            sent += batch
            while taken < sent, let e = try reader.nextEvent(), e["key"]?.stringValue == key + String(taken) {
                taken += 1
            }
            #expect(taken == sent, "the reader got every event, in order")
            if sent == batch {
                for _ in 0..<2 {
                    #expect(FileManager.default.createFile(atPath: step, contents: nil))
                    #expect(eventually { !h.exists(step) }, "the epoch advanced")
                }
            }
            // The drop happens as the events are queued, before the transact is answered.
            dropped = try ConnectionMemoryTests.buffers(c)["dropped_connections"]?.intValue ?? 0
        }
        #expect(dropped == 1)
        #expect(sent > 2 * batch, "not dropped with 8.5 MB waiting behind the first: \(sent) events")
        #expect(h.log.contains("dropping a watcher (uid \(getuid())) that does not read its events"))
        #expect(stalled.isClosedByPeer())
        #expect(try reader.call("ping")["commit"] != nil)
        #expect(try c.call("stats")["connections"] == 2)
    }

    @Test(
        "a user's watcher past 16 MiB of waiting events is dropped even while it takes some",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func usersWatcherIsDroppedWhateverItsReading() throws {
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\nmax_request_bytes = \"8MiB\"\ntotal_buffer_bytes = \"1GiB\"",
            start: false)
        // Never stepped: no watcher is ever behind, and the total is far off.
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": h.dir + "/step-epoch"]
        try h.start()
        let c = try h.client(timeout: 60)
        let script = """
            import signal, socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"watch"}\\n')
            data = b""
            while b"\\n" not in data:
                data += s.recv(4096)
            print("watching", flush=True)
            signal.pause()
            """
        let watcher = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", script,
                h.socket,
            ])
        #expect(watcher.waitForLine { $0 == "watching" })
        let collection = String(repeating: "c", count: 1024)
        let key = String(repeating: "k", count: 1000)
        let batch = 2000
        var sent = 0
        var dropped: Int64 = 0
        for _ in 0..<12 where dropped == 0 {
            let ops: [JSONValue] = (sent..<sent + batch).map { i in
                [
                    "method": "object.put",
                    "params": ["collection": .string(collection), "key": .string(key + String(i)), "value": 1],
                ]
            }
            try c.call("transact", ["ops": .array(ops)])
            sent += batch
            dropped = try ConnectionMemoryTests.buffers(c)["dropped_connections"]?.intValue ?? 0
        }
        #expect(dropped == 1, "the user's watcher held \(sent) events' worth without being dropped")
        #expect(h.log.contains("dropping a watcher (uid \(Nobody.uid)) that does not read its events"))
        _ = watcher.stop()
    }
}
#endif
