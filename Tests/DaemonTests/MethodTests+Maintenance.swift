// stats, sweep, pending and shutdown over the socket, and an unknown method (assetd(8), CONTROL
// PROTOCOL, Methods and Errors).

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

extension MethodTests {
    @Test(
        "stats counts objects, files, bytes and bytes per owner, and reports unlinks, commits, the WAL, uptime and latency"
    )
    func stats() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let shared = try h.makeFile("shared", size: 100)
        try c.putObject("s", "a", ["file": .string(shared)], owner: "alice")
        try c.putObject("s", "b", ["file": .string(shared)], owner: "bob")
        let last = try c.putObject("s", "c", ["file": .string(try h.makeFile("own", size: 50))], owner: "bob")
        let s = try c.call("stats")
        #expect(s["objects"] == 3)
        #expect(s["files"] == 2)
        #expect(s["bytes"] == 150, "a shared file counts once")
        #expect(s["bytes_per_owner"] == ["alice": 100, "bob": 150])
        #expect(s["pending_unlinks"] == 0)
        #expect(s["failed_unlinks"] == 0)
        #expect(s["commit"] == .int(last))
        #expect((s["wal"]?["frames"]?.intValue ?? 0) > 0, "the puts went to the WAL")
        #expect(s["wal"]?["checkpoint_failures"] == 0)
        #expect(s["wal"]?["coalescing"] == true, "store.coalesce_wal is on by default")
        #expect(s["uptime"]?.doubleValue != nil)
        #expect(s["connections"] == 1)
        #expect((s["requests"]?.intValue ?? 0) >= 3)
        let latency = try #require(s["latency_ms"])
        #expect(latency["p50"]?.doubleValue != nil)
        #expect(latency["p99"]?.doubleValue != nil)
        #expect((latency["samples"]?.intValue ?? 0) >= 3)
        #expect(s["counters"]?["unlinked"] == 0)
    }

    @Test("stats counts the WAL's syncs: one more for each durable put answered alone, none for a get")
    func statsCountsSyncs() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        func syncs() throws -> Int64 { try #require(try c.call("stats")["wal"]?["syncs"]?.intValue) }
        let first = try syncs()
        for i in 0..<3 {
            // One client, one put at a time: each is its own commit, answered after its own sync.
            _ = try c.putObject("s", "k\(i)", ["n": .int(Int64(i))], owner: "alice")
            #expect(try syncs() == first + Int64(i) + 1)
        }
        _ = try c.call("object.get", ["collection": "s", "key": "k0"])
        #expect(try syncs() == first + 3)
    }

    @Test("with files.unlink_delay a queued file waits in pending; sweep leaves it until it is due")
    func pendingWithDelay() throws {
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1h""#)
        let c = try h.client()
        let f1 = try h.makeFile("1"), f2 = try h.makeFile("2")
        try c.putObject("p", "a", ["file": .string(f1)])
        try c.putObject("p", "b", ["file": .string(f2)])
        let t0 = Date().timeIntervalSince1970
        try c.deleteObject("p", "a")
        try c.deleteObject("p", "b")
        let pending = try #require(c.call("pending", [:])["pending"]?.arrayValue)
        #expect(Set(pending.compactMap { $0["path"]?.stringValue }) == [f1, f2])
        let first = try #require(pending.first)
        #expect(first["attempts"] == 0)
        #expect(first["last_error"] == .null)
        let queued = try #require(first["queued_at"]?.doubleValue)
        #expect(abs(queued - t0) < 60)
        #expect((first["next_attempt"]?.doubleValue ?? 0) >= queued + 3000)
        #expect(try c.call("pending", ["limit": 1])["pending"]?.arrayValue?.count == 1)

        let sweep = try c.call("sweep")
        #expect(sweep["unlinked"] == 0)
        #expect(sweep["failed"] == 0)
        #expect(sweep["pending"] == 2)
        #expect(h.exists(f1) && h.exists(f2))
        #expect(try c.call("stats")["pending_unlinks"] == 2)
    }

    @Test("sweep runs due unlinks now and reports unlinked, failed and pending")
    func sweep() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("s")
        try c.putObject("s", "a", ["file": .string(f)])
        try c.deleteObject("s", "a")
        let r = try c.call("sweep")
        #expect(r["unlinked"]?.intValue != nil)
        #expect(r["failed"] == 0)
        #expect(r["pending"] == 0)
        #expect(!h.exists(f))
        #expect(try c.call("pending", [:]) == ["pending": []])
        #expect(try c.call("stats")["counters"]?["unlinked"] == 1)
    }

    @Test("shutdown (by an admin) answers, then the daemon exits 0 and removes its socket")
    func shutdown() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("x", "k")
        _ = try c.call("shutdown")
        #expect(h.waitForExit() == 0)
        #expect(!h.exists(h.socket))
    }

    @Test("an unknown method is -32601 and the connection goes on")
    func unknownMethod() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let e = expectRPCError(Code.methodNotFound) { () throws(ClientError) in try c.call("object.frobnicate", [:]) }
        #expect(e?.message.contains("object.frobnicate") == true)
        #expect(try c.call("ping")["version"] != nil)
    }
}
