// Review findings on the daemon (SPEC §6, §7, §8 I6): each test fails because of a defect,
// except those marked "pinned:", which pin a subtle, correct behaviour.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite("daemon review findings", .serialized) struct DaemonReviewFindingsTests {
    // MARK: - framing

    @Test("a too-long line after pipelined requests: their replies come first, in order, then request_too_large")
    func tooLongAfterPipelined() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = 4096")
        let raw = try RawConnection(path: h.socket)
        let put = #"{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"tl","key":"k","value":{}}}"#
        let ping = #"{"jsonrpc":"2.0","id":2,"method":"ping"}"#
        raw.send(put + "\n" + ping + "\n" + String(repeating: "x", count: 5000) + "\n")
        var ids: [JSONValue] = []
        while let line = raw.readLine() { ids.append(line["id"] ?? .null) }
        #expect(ids == [1, 2, .null], "SPEC §6: replies in request order; got ids \(ids)")
        if !ids.contains(1) {
            #expect(try h.client().getObject("tl", "k") == .null, "the put was committed but never answered")
        }
    }

    // MARK: - shutdown

    @Test("SIGTERM while a client does not read its replies: assetd still exits 0 soon")
    func shutdownWithNonReader() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("big", "k", ["blob": .string(String(repeating: "b", count: 64 * 1024))])
        let hog = try RawConnection(path: h.socket)
        let request = #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"big","key":"k"}}"# + "\n"
        let requests = Array(String(repeating: request, count: 3000).utf8)
        var sent = 0, stalls = 0
        while sent < requests.count && stalls < 50 {
            let n = hog.trySend(requests[sent...])
            if n == 0 { stalls += 1; usleep(10_000) } else { sent += n }
        }
        c.close()
        let status = h.stop(timeout: 60)
        #expect(status == 0, "on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 60 s)")
        withExtendedLifetime(hog) {}
    }

    @Test("SIGTERM while a watcher does not read its events: assetd still exits 0 soon")
    func shutdownWithNonReadingWatcher() throws {
        let h = try DaemonHarness()
        let watcher = try RawConnection(path: h.socket)
        watcher.send(#"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n")
        #expect(watcher.readLine()?["id"] == 1)
        let c = try h.client()
        // Events with long keys, until well past any socket buffer (but under the 16 MiB drop limit).
        let longKey = String(repeating: "k", count: 1000)
        for i in 0..<40 {
            let ops: [JSONValue] = (0..<200).map { j in
                ["method": "object.put", "params": ["collection": "w", "key": .string("\(longKey)\(i)-\(j)"), "value": [:]]]
            }
            try c.call("transact", ["ops": .array(ops)])
        }
        c.close()
        let status = h.stop(timeout: 60)
        #expect(status == 0, "on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 60 s)")
        withExtendedLifetime(watcher) {}
    }

    // MARK: - loop stalls

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

    // MARK: - object.get fast path vs general path

    @Test("a key, collection or owner with a NUL byte is refused (-32602): it never aliases the prefix's object")
    func nulInKey() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("nul", "a", ["v": 1])
        for params: JSONValue in [
            ["collection": "nul", "key": "a\u{0}zz"], ["collection": "nul", "key": "a\u{0}zz", "touch": true],
            ["collection": "nul\u{0}other", "key": "a"],
        ] {
            expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("object.get", params) }
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.put", ["collection": "nul", "key": "a\u{0}zz", "value": ["v": 2]])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.put", ["collection": "nul", "key": "b", "value": ["owner": "x\u{0}y"]])
        }
        #expect(try c.getObject("nul", "a")["value"] == ["v": 1])
        #expect(try c.call("object.list", ["collection": "nul"])["keys"] == ["a"])
    }

    @Test("pinned: object.get params: touch of a wrong type is -32602 on both paths; touch null and extra params are ignored")
    func fastGetParams() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("p", "k", ["v": 1])
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.get", ["collection": "p", "key": "k", "touch": "yes"])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.get", ["collection": "p", "key": "k", "touch": 1])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("object.get", ["collection": "p"]) }
        let plain = try c.call("object.get", ["collection": "p", "key": "k"])
        #expect(try c.call("object.get", ["collection": "p", "key": "k", "touch": .null, "extra": 1]) == plain)
        #expect(try c.call("object.get", ["collection": "p", "key": "k", "touch": false]) == plain)
    }

    // MARK: - access control

    @Test(
        "with enforce_ownership a non-admin cannot move accessed of another's object through object.get touch",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func getTouchBypassesOwnership() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("e", "roots", ["v": 1])
        let before = try #require(try c.getObject("e", "roots")["accessed"])
        #expect(try h.assetctlAsNobody("touch", "e", "roots").status == 1, "object.touch is refused")
        passClock(before.doubleValue ?? 0)  // so that a touch would move accessed
        _ = try h.assetctlAsNobody("get", "--touch", "e", "roots")
        #expect(try c.getObject("e", "roots")["accessed"] == before, "object.get touch moved accessed of root's object")
        _ = try h.assetctlAsNobody(
            "transact", #"[{"method":"object.get","params":{"collection":"e","key":"roots","touch":true}}]"#)
        #expect(try c.getObject("e", "roots")["accessed"] == before, "transact object.get touch moved accessed of root's object")
    }

    @Test(
        "with enforce_ownership a non-admin cannot delete another's object through an edge it adds to it",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func edgeCascadeBypassesOwnership() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("e", "victim", ["v": 1])
        #expect(try h.assetctlAsNobody("rm", "e", "victim").status == 1, "a direct delete is refused")
        #expect(try h.assetctlAsNobody("put", "e", "mine", #"{"v":1}"#).status == 0)
        _ = try h.assetctlAsNobody("edge", "add", "x", "e", "mine", "e", "victim", "--rules", "deleteDestinationIfSourceDeleted")
        _ = try h.assetctlAsNobody("rm", "e", "mine")
        #expect(try c.getObject("e", "victim") != .null, "root's object was deleted by nobody's cascade")
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
    let bystanderDone = Locked(false)
}
