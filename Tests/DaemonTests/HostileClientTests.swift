// A client that runs slow queries, pipelines without reading, asks for huge replies or takes
// every connection must not hurt the others (assetd(8), CONTROL PROTOCOL). Small configured
// limits keep these fast; nothing here asserts a time: the bounds in time and memory are
// measured by `scripts/hostile.sh` (also `scripts/bench.sh hostile`).

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct HostileClientTests {
    /// A clause that runs until the query time limit: a six-way self-join of the index.
    static let endlessClause = """
        WHERE key IN (SELECT a.key FROM index_default a, index_default b, index_default c, index_default d, \
        index_default e, index_default f WHERE a.key || b.key || c.key || d.key || e.key || f.key = 'never')
        """

    @Test("slow queries on every query thread keep no other method waiting")
    func slowQueriesStarveNothing() throws {
        // One thread: one uid runs at most half of them, at least one.
        let h = try DaemonHarness(controlSection: "query_threads = 1\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)", ["n": .int(Int64(i))]) }
        let file = try h.makeFile("kept.bin")
        try c.putObject("f", "held", ["file": .string(file)])
        // More slow queries than the thread pool had threads before they got their own lane.
        let slow = try (0..<max(8, 2 * ProcessInfo.processInfo.activeProcessorCount + 2)).map { i in
            let r = try RawConnection(path: h.socket)
            let request: JSONValue = [
                "jsonrpc": "2.0", "id": .int(Int64(i)), "method": "index.query",
                "params": ["where": .string(Self.endlessClause)],
            ]
            r.send(request.serialized() + "\n")
            return r
        }
        let lane = { () throws -> JSONValue? in try c.call("stats")["queries"] }
        #expect(
            try eventually(timeout: 60) {
                try lane()?["running"] == 1 && lane()?["queued"] == .int(Int64(slow.count - 1))
            })

        // Each of these answers while the query thread stays busy.
        try c.putObject("w", "a")
        try c.putObject("w", "b")
        try c.addEdge("link", from: ref("w", "a"), to: ref("w", "b"), rules: ["deleteDestinationIfSourceDeleted"])
        #expect(try c.call("object.touch", ref("w", "b"))["commit"] != nil)
        let put: JSONValue = ["method": "object.put", "params": ["collection": "w", "key": "t", "value": [:]]]
        #expect(try c.call("transact", ["ops": [put]])["commit"] != nil)
        #expect(try c.deleteObject("w", "a")["deleted"]?.refTexts == ["w/a", "w/b"])
        #expect(try c.call("object.list", ["collection": "q", "limit": 5])["keys"]?.arrayValue?.count == 5)
        #expect(try c.call("lease.acquire", ["objects": [ref("q", "k1")], "ttl": "90s"])["lease"] != nil)
        #expect(try c.call("file.get", ["path": .string(file)]) != .null)
        #expect(try c.call("sweep")["pending"] != nil)
        #expect(try c.call("pending")["pending"] != nil)
        #expect(try c.call("edge.count", ["name": "link"]) == ["count": 0])

        // The slow queries were still running all along: none has answered.
        #expect(try lane()?["running"] == 1)
        for r in slow { #expect(!r.hasBytesToRead()) }
    }

    @Test("SIGTERM stops queries running and waiting instead of waiting for their time limit")
    func stopEndsQueries() throws {
        let h = try DaemonHarness(controlSection: "query_threads = 2\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)") }
        let slow = try (0..<4).map { i in
            let r = try RawConnection(path: h.socket)
            let request: JSONValue = [
                "jsonrpc": "2.0", "id": .int(Int64(i)), "method": "index.query",
                "params": ["where": .string(Self.endlessClause)],
            ]
            r.send(request.serialized() + "\n")
            return r
        }
        // Root, an admin, takes both threads (a non-admin uid half): two run, two wait.
        #expect(try eventually { try c.call("stats")["queries"] == ["threads": 2, "running": 2, "queued": 2] })
        // Within the harness's wait: without the stop, the first alone would run 10 minutes.
        #expect(h.stop(timeout: 60) == 0)
        for r in slow { #expect(r.readLine()?["error"]?["data"]?["code"] == "query_rejected") }
    }

    @Test(
        "a query whose client disconnects stops instead of running to its time limit",
        arguments: [
            "index.query", "index.aggregate",
        ])
    func disconnectStopsQuery(method: String) throws {
        let params: JSONValue =
            method == "index.query"
            ? ["where": .string(Self.endlessClause)] : ["function": "COUNT(*)", "where": .string(Self.endlessClause)]
        let h = try DaemonHarness(controlSection: "query_threads = 2\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)") }
        let running = { () throws -> JSONValue? in try c.call("stats")["queries"]?["running"] }
        var gone: RawConnection? = try RawConnection(path: h.socket)
        let request: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        gone?.send(request.serialized() + "\n")
        #expect(try eventually { try running() == 1 })
        gone = nil  // closes the socket
        // With a 10-minute limit, only the disconnect can end it within the wait.
        #expect(try eventually { try running() == 0 })
        #expect(try c.call("ping")["version"] != nil)
        withExtendedLifetime(gone) {}
    }

    @Test("a client flooding tiny bad lines does not stall others: their pings are answered while the flood is")
    func floodOfTinyLines() throws {
        let h = try DaemonHarness()
        let bystander = try h.client(timeout: 60)
        try bystander.call("ping")
        let flood = try RawConnection(path: h.socket)
        flood.setReceiveTimeout(60)
        let progress = FloodProgress()
        // Each chunk is 32 Ki bad lines then a ping numbered by the chunk, so the replies show
        // whether the flood was answered in full and in order.
        let badLines = String(repeating: "1\n", count: 32 * 1024)
        let maxChunks = 2000
        // The flood goes on until the bystander is done: a daemon that served the flood
        // before others would let it run to maxChunks and never answer the bystander meanwhile.
        let sender = onThread {
            for chunk in 0..<maxChunks where !progress.bystanderDone.current {
                flood.send(badLines + #"{"jsonrpc":"2.0","id":\#(chunk),"method":"ping"}"# + "\n")
                progress.sent.withLock { $0 += 32 * 1024 + 1 }
                progress.chunks.withLock { $0 += 1 }
            }
            flood.send(#"{"jsonrpc":"2.0","id":"end","method":"ping"}"# + "\n")
        }
        // Drains the flood's replies so it is never paused for backpressure; checks each one.
        let reader = onThread {
            var nextPing = 0
            while let reply = flood.readLine(), reply["id"] != "end" {
                if reply["id"] == .null, reply["error"]?["code"] == .int(Int64(Code.invalidRequest)) {
                } else if reply["id"] == .int(Int64(nextPing)), reply["result"]?["version"] != nil {
                    nextPing += 1
                } else {
                    progress.unexpected.withLock { $0.append(reply.serialized()) }
                }
                progress.answered.withLock { $0 += 1 }
            }
            progress.pingsAnswered.withLock { $0 = nextPing }
        }
        #expect(eventually(timeout: 60) { progress.answered.current > 0 }, "the flood is being answered")
        // Outstanding flood lines (sent, reply not yet read) when each bystander ping came back.
        var outstanding: [Int] = []
        defer { progress.bystanderDone.withLock { $0 = true } }  // ends the flood if a ping throws
        for _ in 0..<20 {
            try bystander.call("ping")
            outstanding.append(progress.sent.current - progress.answered.current)
        }
        progress.bystanderDone.withLock { $0 = true }
        #expect(sender.wait(timeout: .now() + 120) == .success)
        #expect(reader.wait(timeout: .now() + 120) == .success)
        let chunks = progress.chunks.current
        #expect(chunks < maxChunks, "the bystander's pings waited until the flood ended")
        #expect(outstanding.contains { $0 > 0 }, "no ping was answered while the flood was: \(outstanding)")
        #expect(progress.answered.current == progress.sent.current, "every flood line is answered")
        #expect(progress.pingsAnswered.current == chunks, "the flood's pings come back in order")
        #expect(progress.unexpected.current.isEmpty, "\(progress.unexpected.current.prefix(3))")
    }
}

extension RawConnection {
    /// Whether a reply byte is waiting, without blocking.
    func hasBytesToRead() -> Bool {
        var b: UInt8 = 0
        return recv(fd, &b, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// Pipelines up to 3,000 object.get requests for `collection`/`key` without reading a
    /// reply, until all are sent or the socket stays full: a client that never reads.
    func sendGetsWithoutReading(_ collection: String, _ key: String) {
        let params = #"{"collection":"\#(collection)","key":"\#(key)"}"#
        let request = #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":\#(params)}"# + "\n"
        let requests = Array(String(repeating: request, count: 3000).utf8)
        var sent = 0, stalls = 0
        while sent < requests.count && stalls < 50 {
            let n = trySend(requests[sent...])
            if n == 0 {
                stalls += 1
                usleep(10_000)
            } else {
                sent += n
            }
        }
    }
}

@Suite struct ConnectionMemoryTests {
    /// A request line of about 1 KiB (the id pads it) for object.get of `key`.
    static func paddedGet(_ i: Int, _ key: String) -> String {
        let id = String(repeating: "x", count: 900) + "\(i)"
        return #"{"jsonrpc":"2.0","id":"\#(id)","method":"object.get","params":{"collection":"big","key":"\#(key)"}}"#
            + "\n"
    }

    static func buffers(_ c: ControlClient) throws -> JSONValue { try c.call("stats")["buffers"] ?? .null }

    @Test("a burst of requests, once answered, leaves nothing buffered for its connection")
    func burstIsReleased() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        let value = String(repeating: "v", count: 2048)
        var burst = ""
        for i in 0..<300 {
            burst +=
                #"{"jsonrpc":"2.0","id":\#(i),"method":"object.put","params":{"collection":"b","key":"k\#(i)","value":"\#(value)"}}"#
                + "\n"
        }
        raw.send(burst)
        for _ in 0..<300 { #expect(raw.readLine()?["result"]?["commit"] != nil) }
        let c = try h.client()
        let b = try Self.buffers(c)
        #expect(b["input_bytes"] == 0 && b["output_bytes"] == 0, "\(b)")
    }

    @Test("a client that pipelines without reading is paused at its bounds; the others keep answering")
    func nonReaderIsPaused() throws {
        let h = try DaemonHarness(
            controlSection: "connection_input_bytes = \"64KiB\"\nconnection_output_bytes = \"64KiB\"")
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "y", count: 50_000)))
        let raw = try RawConnection(path: h.socket)
        // Far more than the bounds and the socket buffers hold: the sender blocks once the
        // daemon stops reading, and is released by the shutdown below.
        let requests = Array((0..<4000).map { Self.paddedGet($0, "x") }.joined().utf8)
        let sent = onThread { raw.send(requests) }
        #expect(try eventually(timeout: 60) { try Self.buffers(c)["paused_connections"] == 1 })
        let b = try Self.buffers(c)
        // Reading stops within one read (64 KiB) of the input bound, plus a partial line.
        let input: Int64 = b["input_bytes"]?.intValue ?? .max, inputBound: Int64 = 64 * 1024 + 65_536 + 2048
        #expect(input <= inputBound, "\(b)")
        // Replies stop being made within one reply of the output bound.
        let output: Int64 = b["output_bytes"]?.intValue ?? .max, outputBound: Int64 = 64 * 1024 + 52_000
        #expect(output <= outputBound, "\(b)")
        // Everyone else is served meanwhile.
        #expect(try c.call("ping")["version"] != nil)
        try c.putObject("other", "k")
        #expect(try c.getObject("other", "k") != .null)
        shutdown(raw.fd, Int32(SHUT_RDWR))
        sent.wait()
        var last: JSONValue = .null
        #expect(
            try eventually(timeout: 60) {
                last = try Self.buffers(c)
                return last["input_bytes"] == 0 && last["output_bytes"] == 0 && last["paused_connections"] == 0
            }, "\(last)")
    }

    @Test("over the total bound, a connection that does not take its replies is dropped")
    func nonReaderIsDroppedOverTotal() throws {
        let h = try DaemonHarness(
            controlSection:
                "connection_input_bytes = \"64KiB\"\nconnection_output_bytes = \"64KiB\"\ntotal_buffer_bytes = \"160KiB\""
        )
        let c = try h.client(timeout: 60)
        try c.putObject("big", "x", .string(String(repeating: "y", count: 50_000)))
        let requests = Array((0..<4000).map { Self.paddedGet($0, "x") }.joined().utf8)
        let raws = try (0..<3).map { _ in try RawConnection(path: h.socket) }
        let senders = raws.map { raw in onThread { raw.send(requests) } }
        #expect(try eventually(timeout: 60) { (try Self.buffers(c)["dropped_connections"]?.intValue ?? 0) >= 1 })
        #expect(try c.call("ping")["version"] != nil)
        for raw in raws { shutdown(raw.fd, Int32(SHUT_RDWR)) }
        for s in senders { s.wait() }
        #expect(try eventually(timeout: 60) { try Self.buffers(c)["output_bytes"] == 0 })
    }
}

@Suite struct ReplySizeTests {
    @Test("a query reply over control.max_reply_bytes is refused with reply_too_large and a hint to page")
    func queryReplyTooLarge() throws {
        let h = try DaemonHarness(controlSection: "max_reply_bytes = \"64KiB\"")
        let c = try h.client(timeout: 60)
        for i in 0..<20 { try c.putObject("r", "k\(i)", .string(String(repeating: "z", count: 10_000))) }
        let e = expectRPCError(Code.application, "reply_too_large") { () throws(ClientError) in
            try c.call("index.query", ["where": "", "include": "objects"])
        }
        #expect(e?.message.contains("LIMIT") == true, "\(String(describing: e))")
        // Asking for less works, on the same connection.
        #expect(try c.call("index.query", ["where": "", "include": "keys"])["rows"]?.arrayValue?.count == 20)
        let page = try c.call("index.query", ["where": "ORDER BY key LIMIT 3", "include": "objects"])
        #expect(page["rows"]?.arrayValue?.count == 3)
    }

    @Test("a write whose reply is over max_reply_bytes answers its commit cut to fit, with all its events")
    func committedWriteAnswersWhateverItsSize() throws {
        let h = try DaemonHarness(controlSection: "max_reply_bytes = \"1KiB\"")
        let c = try h.client(timeout: 60)
        let watcher = try h.client(timeout: 60)
        try watcher.call("watch", ["types": ["object.deleted"]])
        try c.putObject("root", "r")
        // A cascade whose reply lists 60 deleted objects: over 1 KiB.
        for i in 0..<60 {
            try c.putObject("leaf", "a-long-enough-key-\(i)")
            try c.addEdge(
                "l", from: ref("root", "r"), to: ref("leaf", "a-long-enough-key-\(i)"),
                rules: ["deleteDestinationIfSourceDeleted"])
        }
        let r = try c.deleteObject("root", "r")
        #expect(r["commit"] != nil && r["deleted_total"] == 61 && r["truncated"] == true)
        let listed = try #require(r["deleted"]?.arrayValue)
        #expect(!listed.isEmpty && listed.count < 61 && listed.first == ref("root", "r"))
        #expect(r.serialized().utf8.count < 1024)
        #expect(try c.call("object.list", ["collection": "leaf"])["keys"] == [])
        var deleted = 0
        while deleted < 61, let event = try watcher.nextEvent() {
            if event["type"] == "object.deleted" { deleted += 1 }
        }
        #expect(deleted == 61)

        // assetctl rm prints what the reply holds, then the totals.
        try c.putObject("root", "r")
        for i in 0..<60 {
            try c.putObject("leaf", "a-long-enough-key-\(i)")
            try c.addEdge(
                "l", from: ref("root", "r"), to: ref("leaf", "a-long-enough-key-\(i)"),
                rules: ["deleteDestinationIfSourceDeleted"])
        }
        let rm = try h.assetctl("rm", "root", "r")
        #expect(rm.status == 0, "\(rm.stderr)")
        #expect(rm.stdout.hasSuffix("\ntruncated: 61 deleted and 0 queued in all\n"), "\(rm.stdout)")
        #expect(rm.stdout.contains("\ndeleted root/r\n"), "\(rm.stdout)")
    }

    /// A daemon with max_reply_bytes 4 KiB holding c/k, whose value takes 10 KB.
    func objectOverReplyLimit() throws -> (DaemonHarness, ControlClient, JSONValue) {
        let h = try DaemonHarness(controlSection: "max_reply_bytes = \"4KiB\"")
        let c = try h.client(timeout: 60)
        let value: JSONValue = ["blob": .string(String(repeating: "x", count: 10_000))]
        try c.putObject("c", "k", value)
        return (h, c, value)
    }

    @Test("a touching get of an object over max_reply_bytes answers it once the touch is recorded")
    func touchingGetAnswersWhateverItsSize() throws {
        let (h, c, value) = try objectOverReplyLimit()
        let before = try #require(try c.call("ping")["commit"]?.intValue)
        let got = try c.call("object.get", ["collection": "c", "key": "k", "touch": true])
        #expect(got["value"] == value)
        #expect(try c.call("ping")["commit"]?.intValue == before, "the touch is in memory")
        #expect(try c.call("stats")["access"]?["pending"] == 1, "and recorded")
        #expect(h.isRunning)
    }

    @Test("assetctl --db get prints an object over max_reply_bytes")
    func offlineGetPrintsWhateverItsSize() throws {
        let (h, c, _) = try objectOverReplyLimit()
        let stored = try c.getObject("c", "k")
        c.close()
        #expect(h.stop() == 0)
        let db = ["--db", h.database, "--config", h.configPath]
        let get = try runProcess(Binaries.assetctl, db + ["--json", "get", "c", "k"])
        #expect(get.status == 0, "\(get.stderr)")
        #expect((try? JSONValue.parse(get.stdout)) == stored)
    }

    @Test("an aggregate that builds a string over the reply limit is stopped with reply_too_large")
    func aggregateTooLarge() throws {
        let h = try DaemonHarness(controlSection: "max_reply_bytes = \"64KiB\"")
        let c = try h.client(timeout: 60)
        for i in 0..<100 { try c.putObject("g", "k\(i)") }
        _ = expectRPCError(Code.application, "reply_too_large") { () throws(ClientError) in
            try c.call("index.aggregate", ["function": "group_concat(printf('%.*c', 1000, 'x'))"])
        }
        let small = try c.call("index.aggregate", ["function": "length(group_concat(printf('%.*c', 100, 'x')))"])
        #expect(small["value"] == 10_099, "\(small)")
    }
}

@Suite struct ConnectionSlotTests {
    /// Holds one connection as nobody until stopped.
    static func watcherAsNobody(_ h: DaemonHarness) throws -> BackgroundProcess {
        try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetctl, "--socket",
                h.socket, "watch",
            ])
    }

    @Test(
        "a user who takes every slot it may leaves the admins theirs, and is held to its own cap",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func slotsKeptForAdmins() throws {
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                max_connections = 6
                admin_reserved_connections = 2
                max_connections_per_uid = 3
                """)
        let c = try h.client(timeout: 60)  // an admin's: the daemon's own uid
        let watchers = try (0..<3).map { _ in try Self.watcherAsNobody(h) }
        #expect(eventually(timeout: 60) { (try? c.call("stats")["connections"]) == 4 })
        // nobody's fourth is past its own cap.
        let capped = try h.assetctlAsNobody("ping")
        #expect(capped.status != 0, "\(capped)")
        #expect(eventually { h.log.contains("refusing a connection: uid \(Nobody.uid) holds 3") })
        for w in watchers { w.stop() }
        #expect(eventually(timeout: 60) { (try? c.call("stats")["connections"]) == 1 })

        // With the per-uid cap out of the way, nobody may take all but the admins' slots.
        h.controlSection = h.controlSection.replacingOccurrences(of: "max_connections_per_uid = 3", with: "")
        try h.writeConfig()
        _ = h.stop()
        try h.start()
        let admin = try h.client(timeout: 60)
        let more = try (0..<3).map { _ in try Self.watcherAsNobody(h) }
        #expect(eventually(timeout: 60) { (try? admin.call("stats")["connections"]) == 4 })
        let refused = try h.assetctlAsNobody("ping")
        #expect(refused.status != 0, "\(refused)")
        #expect(eventually { h.log.contains("4 of 6 in use, the rest kept for admins") })
        // The admins still connect, up to max_connections.
        let others = try (0..<2).map { _ in try h.client(timeout: 60) }
        for o in others { #expect(try o.call("ping")["version"] != nil) }
        #expect(try admin.call("stats")["connections"] == 6)
        for w in more { w.stop() }
    }
}

/// What the flooding client's threads and the bystander share.
private final class FloodProgress: Sendable {
    /// Flood lines written to the socket.
    let sent = Locked(0)
    /// Flood replies read.
    let answered = Locked(0)
    /// Chunks written.
    let chunks = Locked(0)
    /// The flood's numbered pings answered in order.
    let pingsAnswered = Locked(0)
    /// Replies that were neither the bad line's error nor the next ping.
    let unexpected = Locked<[String]>([])
    /// Set once the bystander is done: the flood stops.
    let bystanderDone = Locked(false)
}
