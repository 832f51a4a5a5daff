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
        let status = h.stop(timeout: 15)
        #expect(status == 0, "SPEC §7: on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 15 s)")
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
        let status = h.stop(timeout: 15)
        #expect(status == 0, "SPEC §7: on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 15 s)")
        withExtendedLifetime(watcher) {}
    }

    // MARK: - loop stalls

    @Test("a client flooding tiny bad lines does not stall others: their pings stay under 1 s")
    func floodOfTinyLines() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let flood = try RawConnection(path: h.socket)
        flood.setReceiveTimeout(2)
        // Drain the flood's replies on another thread so it is never paused for backpressure.
        let reader = onThread { while flood.readLine() != nil {} }
        let sender = onThread {
            let chunk = Array(String(repeating: "1\n", count: 32 * 1024).utf8)
            for _ in 0..<16 { flood.send(chunk) }
        }
        var worst = 0.0
        for _ in 0..<20 {
            worst = max(worst, try seconds { try bystander.call("ping") })
            usleep(50_000)
        }
        #expect(worst < 1, "SPEC §8 I6: no input stalls other clients; slowest ping took \(worst) s")
        _ = sender.wait(timeout: .now() + 120)
        _ = reader.wait(timeout: .now() + 120)
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
        usleep(20_000)
        _ = try h.assetctlAsNobody("get", "--touch", "e", "roots")
        #expect(try c.getObject("e", "roots")["accessed"] == before, "object.get touch moved accessed of root's object")
        usleep(20_000)
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
