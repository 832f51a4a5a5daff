// Leases and pins over the socket and through assetctl (assetd(8), CONTROL PROTOCOL, Methods;
// assetctl(1), COMMANDS): a lease belongs to its connection and ends with it;
// `lease acquire -- COMMAND` holds one while COMMAND runs; pins are writes with the usual answers.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct LeaseTests {
    @Test("a lease is listed with its holder, released by its id, and gone once released")
    func acquireListRelease() throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("a.bin")
        let c = try h.client()
        let before = Date().timeIntervalSince1970
        let lease = try c.call(
            "lease.acquire",
            [
                "objects": [ref("photos", "p1")], "files": [.string(file)], "ttl": "90s",
            ])
        let after = Date().timeIntervalSince1970
        let id = try #require(lease["lease"]?.stringValue)
        let expires = try #require(lease["expires"]?.doubleValue)
        // Taken between the two readings of the clock, however long the call took.
        #expect(expires >= before + 90 - 0.01 && expires <= after + 90 + 0.01, "\(before) \(expires) \(after)")
        let listed = try h.client().call("lease.list")["leases"]?.arrayValue ?? []
        #expect(listed.count == 1)
        #expect(listed.first?["lease"] == .string(id) && listed.first?["files"] == [.string(file)])
        #expect(listed.first?["objects"]?.refTexts == ["photos/p1"])
        #expect(try c.call("lease.release", ["lease": .string(id)])["released"] == true)
        #expect(try c.call("lease.release", ["lease": .string(id)])["released"] == false)
        #expect(try c.call("lease.list")["leases"] == [])
    }

    @Test("a lease ends when the connection that took it closes")
    func endsWithConnection() throws {
        let h = try DaemonHarness()
        let holder = try h.client()
        _ = try holder.call("lease.acquire", ["objects": [ref("c", "k")], "ttl": 3600])
        let observer = try h.client()
        #expect(try observer.call("lease.list")["leases"]?.arrayValue?.count == 1)
        holder.close()
        #expect(try eventually { try observer.call("lease.list")["leases"] == [] })
    }

    @Test(
        "a lease's ttl is a duration string or seconds, and a bad one is invalid params",
        arguments: [
            (JSONValue.string("1h30m"), 5400.0), (.int(60), 60.0), (.double(2.5), 2.5),
        ])
    func ttlForms(ttl: JSONValue, seconds: Double) throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let before = Date().timeIntervalSince1970
        let lease = try c.call("lease.acquire", ["objects": [ref("c", "k")], "ttl": ttl])
        let after = Date().timeIntervalSince1970
        let expires = lease["expires"]?.doubleValue ?? 0
        #expect(
            expires >= before + seconds - 0.01 && expires <= after + seconds + 0.01,
            "\(before) \(lease.serialized()) \(after)")
    }

    @Test("a lease without ttl, with a bad ttl, with nothing to protect or outside the roots is refused")
    func refused() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("lease.acquire", ["objects": [ref("c", "k")]])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("lease.acquire", ["objects": [ref("c", "k")], "ttl": "soon"])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("lease.acquire", ["ttl": "1m"]) }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("lease.acquire", ["objects": [ref("c", "k")], "ttl": "2d"])
        }
        expectRPCError(Code.application) { () throws(ClientError) in
            try c.call("lease.acquire", ["files": ["/etc/passwd"], "ttl": "1m"])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("lease.release", [:]) }
    }

    @Test("assetctl lease acquire holds the lease while its command runs and exits with its status")
    func acquireAroundCommand() throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("playing.mp4")
        // The command lists the leases through a second assetctl while the first holds one.
        let script = "\(Binaries.assetctl) --socket \(h.socket) --json lease ls; exit 7"
        let r = try h.assetctl(
            "lease", "acquire", "--ttl", "10m", "--object", "media/m1", "--file", file, "--", "/bin/sh", "-c", script)
        #expect(r.status == 7, "\(r.stderr)")
        let listed = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(listed["leases"]?.arrayValue?.first?["files"] == [.string(file)], "\(r.stdout)")
        #expect(listed["leases"]?.arrayValue?.first?["objects"]?.refTexts == ["media/m1"])
        #expect(try h.client().call("lease.list")["leases"] == [], "released when the command ended")
        let usage = try h.assetctl("lease", "acquire", "--object", "media/m1")
        #expect(usage.status == 64, "a command is required: \(usage.stderr)")
    }

    @Test("assetctl lease ls prints a table; --db refuses leases with a clear message")
    func listTableAndOffline() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        _ = try c.call("lease.acquire", ["objects": [ref("media", "m2")], "ttl": "1h"])
        let table = try h.assetctl("lease", "ls")
        #expect(table.status == 0)
        #expect(table.stdout.hasPrefix("LEASE") && table.stdout.contains("media/m2"), "\(table.stdout)")
        // Past lease.list's default page of 1000: assetctl follows every page.
        for i in 0..<1000 { _ = try c.call("lease.acquire", ["objects": [ref("media", "p\(i)")], "ttl": "1h"]) }
        let all = try h.assetctl("--json", "lease", "ls")
        #expect(all.status == 0, "\(all.stderr)")
        #expect(try JSONValue.parse(all.stdout)["leases"]?.arrayValue?.count == 1001)
        h.stop()
        let offline = try runProcess(
            Binaries.assetctl,
            ["--db", h.database, "--config", h.configPath, "lease", "acquire", "--object", "a/b", "--", "/bin/true"])
        #expect(offline.status == 1)
        #expect(offline.stderr.contains("needs a running daemon"), "\(offline.stderr)")
    }

    @Test("an explicit delete of a leased file's object defers its unlink, with an event, until the lease is released")
    func deferredUntilReleased() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let file = try h.makeFile("deferred.bin")
        try c.putObject("media", "d", ["file": .string(file)])
        let watcher = try h.client()
        _ = try watcher.call("watch", ["types": ["file.unlink_skipped", "file.unlinked"]])
        let holder = try h.client()
        let lease = try holder.call("lease.acquire", ["files": [.string(file)], "ttl": "1h"])
        try c.deleteObject("media", "d")
        let skipped = try #require(try watcher.nextEvent())
        #expect(
            skipped["type"] == "file.unlink_skipped" && skipped["deferred"] == true && skipped["reason"] == "leased",
            "\(skipped.serialized())")
        #expect(h.exists(file), "explicit deletes are not blocked, but the leased file stays")
        #expect(try holder.call("lease.release", ["lease": lease["lease"] ?? .null])["released"] == true)
        var unlinked: JSONValue?
        while unlinked == nil, let e = try watcher.nextEvent() {
            if e["type"] == "file.unlinked" { unlinked = e }
        }
        #expect(unlinked?["path"] == .string(file))
        #expect(!h.exists(file))
    }

    @Test("a lease that lapses lets its deferred file go on the sweep timer, with its connection still open")
    func lapsedLeaseEnds() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let file = try h.makeFile("lapse.bin")
        try c.putObject("media", "l", ["file": .string(file)])
        _ = try c.call("lease.acquire", ["files": [.string(file)], "ttl": 1])
        try c.deleteObject("media", "l")
        #expect(h.exists(file))
        #expect(eventually(timeout: 60) { !h.exists(file) }, "gone within a few sweeps of the lapse")
        #expect(try c.call("lease.list")["leases"] == [])
    }

    @Test("pin and unpin answer with a commit and need an existing object")
    func pinUnpin() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("photos", "p1", ["v": 1])
        let pin = try h.assetctl("pin", "photos", "p1")
        #expect(pin.status == 0 && pin.stdout.hasPrefix("commit "), "\(pin.stderr)")
        #expect(try c.call("object.unpin", ref("photos", "p1"))["commit"] != nil)
        let missing = try h.assetctl("pin", "photos", "nope")
        #expect(missing.status == 1)
        expectRPCError(Code.application, "not_found") { () throws(ClientError) in
            try c.call("object.pin", ref("photos", "nope"))
        }
    }

    @Test("checkpoint answers for an admin")
    func checkpoint() throws {
        let h = try DaemonHarness()
        try h.client().putObject("c", "k")
        let r = try h.assetctl("checkpoint")
        #expect(
            r.status == 0 && r.stdout == "checkpointed: the write-ahead log is back in the database file\n",
            "\(r.stdout)\(r.stderr)")
        let checkpointed = try h.client().call("checkpoint")
        #expect(checkpointed["checkpointed"] == true && checkpointed["emptied"] == true)
    }
}
