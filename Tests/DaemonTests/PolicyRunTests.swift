// Lifecycle policies through the daemon (assetd(8), DATA MODEL, Lifecycle policies): assetctl
// enforce over the socket, protection by leases and pins, dry runs that equal real runs, the policy
// timer, and events with cause `policy`.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

/// A [policy] for tests: nothing young is spared, the timer is out of the way.
func policyConfig(maxBytes: Int, batch: Int = 1000, interval: String = "1h") -> String {
    """
    [policy]
    interval  = "\(interval)"
    max_bytes = \(maxBytes)
    low_water = "100%"
    min_age   = "0s"
    batch     = \(batch)
    """
}

extension ControlClient {
    /// object.put of `{file: path}`.
    @discardableResult
    func putFile(_ collection: String, _ key: String, _ path: String, owner: String? = nil) throws(ClientError) -> Int64
    {
        try putObject(collection, key, ["file": .string(path)], owner: owner)
    }
}

@Suite struct PolicyRunTests {
    @Test("a leased file survives enforce over budget and goes once its lease's connection closes")
    func leaseProtectsUntilConnectionCloses() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 100))
        let c = try h.client()
        let leased = try h.makeFile("leased.bin", size: 200)
        let other = try h.makeFile("other.bin", size: 50)
        try c.putFile("media", "leased", leased)
        try c.putFile("media", "other", other)
        let holder = try h.client()
        _ = try holder.call("lease.acquire", ["files": [.string(leased)], "ttl": "1h"])

        let run = try h.assetctl("enforce")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(eventually { !h.exists(other) }, "the unleased object is evicted and its file unlinked")
        #expect(try c.call("sweep")["unlinked"] == 0, "every due unlink has run")
        #expect(h.exists(leased), "over budget still, but leased")
        #expect(try c.call("object.get", ref("media", "leased")) != .null, "and not evicted")

        holder.close()
        #expect(try eventually { try c.call("lease.list")["leases"] == [] })
        let again = try h.assetctl("enforce")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(eventually { !h.exists(leased) }, "the next enforcement deletes it once the lease ended")
    }

    @Test("a pinned object survives enforce until unpinned")
    func pinProtects() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 10))
        let c = try h.client()
        let file = try h.makeFile("pinned.bin", size: 100)
        try c.putFile("media", "p", file)
        #expect(try h.assetctl("pin", "media", "p").status == 0)
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"] == [], "\(plan.serialized())")
        #expect(try c.getObject("media", "p") != .null && h.exists(file))
        #expect(try h.assetctl("unpin", "media", "p").status == 0)
        let after = try c.call("policy.enforce")
        #expect(after["objects"]?.refTexts == ["media/p"], "\(after.serialized())")
        #expect(eventually { !h.exists(file) })
    }

    @Test("a dry run's objects, files and bytes equal the real run's, over the socket")
    func dryRunEqualsRealRun() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 500, batch: 3))
        let c = try h.client()
        for i in 0..<12 {
            try c.putFile(
                "media", "m\(i)", try h.makeFile("m\(i).bin", size: 100 + i), owner: i % 2 == 0 ? "alice" : "bob")
            if i % 3 == 0 { _ = try c.call("object.touch", ref("media", "m\(i)")) }
        }
        let dry = try c.call("policy.enforce", ["dry_run": true])
        #expect(dry["dry_run"] == true && dry["commit"] == nil)
        #expect(try c.call("stats")["objects"] == 12, "a dry run changes nothing")
        let real = try c.call("policy.enforce")
        #expect(real["dry_run"] == false && real["commit"]?.intValue != nil)
        #expect((real["objects"]?.arrayValue?.count ?? 0) > 3, "several batches")
        #expect(dry["objects"] == real["objects"])
        #expect(dry["files"] == real["files"])
        #expect(dry["bytes"] == real["bytes"])
        let human = try h.assetctl("enforce", "--dry-run")
        #expect(human.status == 0 && human.stdout.contains("(dry run)"), "\(human.stdout)")
    }

    @Test("evicted objects raise object.deleted with cause policy, batch by batch")
    func eventsCarryCausePolicy() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1, batch: 2))
        let c = try h.client()
        let watcher = try h.client()
        _ = try watcher.call("watch", ["types": ["object.deleted"]])
        for i in 0..<5 { try c.putFile("media", "e\(i)", try h.makeFile("e\(i).bin", size: 10)) }
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"]?.arrayValue?.count == 5)
        var seen = [String]()
        while seen.count < 5, let e = try watcher.nextEvent() {
            #expect(e["cause"] == "policy", "\(e.serialized())")
            seen.append("\(e["collection"]?.stringValue ?? "")/\(e["key"]?.stringValue ?? "")")
        }
        #expect(Set(seen) == Set(plan["objects"]?.refTexts ?? []))
    }

    @Test("evict and expire over the socket and through assetctl; bytes or owner is required")
    func evictAndExpire() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1 << 40))
        let c = try h.client()
        for i in 0..<4 {
            try c.putFile("media", "x\(i)", try h.makeFile("x\(i).bin", size: 100), owner: i < 2 ? "alice" : "bob")
        }
        let evict = try h.assetctl("--json", "evict", "--owner", "alice", "--dry-run")
        #expect(evict.status == 0, "\(evict.stderr)")
        let plan = try JSONValue.parse(evict.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(Set(plan["objects"]?.refTexts ?? []) == ["media/x0", "media/x1"])
        expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("policy.evict", [:]) }
        #expect(try h.assetctl("evict").status == 64)
        let bytes = try c.call("policy.evict", ["bytes": "150B"])
        #expect(bytes["objects"]?.arrayValue?.count == 2 && bytes["bytes"] == 200, "\(bytes.serialized())")
        let expire = try h.assetctl("expire", "--older-than", "0s", "--collection", "media")
        #expect(expire.status == 0 && expire.stdout.contains("deleted 2 objects"), "\(expire.stdout)\(expire.stderr)")
        #expect(try c.call("stats")["objects"] == 0)
    }

    @Test("enforce without [policy] says that nothing is configured, on stdout and as configured: false")
    func enforceWithoutPolicy() throws {
        let h = try DaemonHarness()
        for args in [["enforce", "--dry-run"], ["enforce"]] {
            let r = try runProcess(Binaries.assetctl, ["--socket", h.socket] + args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(
                r.stdout.hasSuffix("\nno [policy] is configured: nothing is evicted or expired\n"),
                "\(args): \(r.stdout)")
        }
        let json = try h.assetctl("--json", "enforce", "--dry-run")
        #expect(try JSONValue.parse(json.stdout)["configured"] == false)

        let configured = try DaemonHarness(extraConfig: "[policy]\nmax_bytes = \"1GiB\"\n")
        let r = try configured.assetctl("enforce", "--dry-run")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("no [policy]"), "\(r.stdout)")
        #expect(
            try JSONValue.parse(try configured.assetctl("--json", "enforce", "--dry-run").stdout)["configured"] == nil)
    }

    @Test("the policy timer enforces every interval without being asked")
    func timerEnforces() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 10, interval: "1s"))
        let c = try h.client()
        let file = try h.makeFile("timer.bin", size: 100)
        try c.putFile("media", "t", file)
        #expect(eventually(timeout: 60) { !h.exists(file) })
        #expect(try c.getObject("media", "t") == .null)
    }

    @Test("SIGHUP applies a new [policy]: a budget added by reload is enforced by the next run")
    func reloadAppliesPolicy() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putFile("media", "r", try h.makeFile("r.bin", size: 2 << 20))
        #expect(try c.call("policy.enforce")["objects"] == [], "no policy: nothing is evicted")
        h.extraConfig = policyConfig(maxBytes: 1 << 20)  // a reload refuses a budget it warns of
        try h.reload()
        #expect(try c.call("policy.enforce")["objects"]?.refTexts == ["media/r"])
    }

    @Test("reloads more often than the interval do not hold the policy timer off")
    func reloadsKeepTimerRunning() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 10, interval: "2s"))
        let c = try h.client()
        let file = try h.makeFile("reloaded.bin", size: 100)
        try c.putFile("media", "r", file)
        // Same [policy] each time, reloads half a second apart (time that passes for real),
        // until the file is gone: 120 of them span 30 intervals.
        for _ in 0..<120 where h.exists(file) {
            try h.reload()
            usleep(500_000)
        }
        #expect(!h.exists(file), "the timer was restarted by every reload and never fired")
    }

    @Test("a connection answered busy for a maintenance run goes on answering its next requests")
    func busyAnswerKeepsConnectionServing() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1, batch: 1))
        try populate(h, count: 1500)
        let started = DispatchSemaphore(value: 0)
        let socket = h.socket
        let done = onThread {
            var signalled = false
            _ = try? ControlClient(socketPath: socket, timeout: 120).call("policy.enforce", ["progress": true]) { _ in
                if !signalled { started.signal() }
                signalled = true
            }
            started.signal()
        }
        #expect(started.wait(timeout: .now() + 60) == .success)
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(10)
        raw.send(
            #"{"jsonrpc":"2.0","id":1,"method":"policy.expire","params":{"older_than":"0s","dry_run":true}}"# + "\n")
        let busy = raw.readLine()
        raw.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n")
        let pong = raw.readLine()
        _ = done.wait(timeout: .now() + 120)
        #expect(
            busy?["error"]?["data"]?["code"] == "busy",
            "the first run must still hold the slot: \(String(describing: busy))")
        #expect(
            pong?["id"] == 2 && pong?["result"]?["version"] != nil,
            "the connection stalled after busy: \(String(describing: pong))")
    }
}
