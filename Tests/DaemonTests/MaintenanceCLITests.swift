// Maintenance as cron runs it (assetctl(1), Maintenance and cron): one maintenance run at a time (a
// second one is skipped with exit 0 and a message), progress notifications only when asked and
// always before the reply, and admin-only real runs with dry runs open to everyone.

import AssetClient
import AssetService
import AssetStore
import ControlProtocol
import Foundation
import Testing

/// Puts `count` objects `media/s<i>`, each with a file of its own, in transactions of 500.
func populate(_ h: DaemonHarness, count: Int, size: Int = 1) throws {
    let c = try h.client(timeout: 60)
    for start in stride(from: 0, to: count, by: 500) {
        var ops = [JSONValue]()
        for i in start..<min(count, start + 500) {
            let path = try h.makeFile("s/\(i / 1000)/\(i).bin", size: size)
            ops.append([
                "method": "object.put",
                "params": [
                    "collection": "media", "key": .string("s\(i)"), "value": ["file": .string(path)],
                ],
            ])
        }
        _ = try c.call("transact", ["ops": .array(ops)])
    }
}

@Suite(.serialized) struct MaintenanceCLITests {
    @Test("a second maintenance run while one is in progress is skipped: exit 0 and a message naming the first")
    func overlappingRunsSkip() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1, batch: 1), controlSection: #"mode = "0666""#)
        try populate(h, count: 1500)
        let started = DispatchSemaphore(value: 0)
        let first = Locked<Result<JSONValue, ClientError>?>(nil)
        let socket = h.socket
        let done = onThread {
            do {
                let c = try ControlClient(socketPath: socket, timeout: 120)
                var signalled = false
                let r = try c.call("policy.enforce", ["progress": true]) { _ in
                    if !signalled { started.signal() }
                    signalled = true
                }
                first.withLock { $0 = .success(r) }
            } catch {
                first.withLock { $0 = .failure(error as! ClientError) }  // the client throws only ClientError
            }
            started.signal()
        }
        #expect(started.wait(timeout: .now() + 60) == .success)
        let second = try h.assetctl("enforce")
        let evict = try h.assetctl("evict", "--bytes", "1")
        let verify = try h.assetctl("verify")
        let direct = try h.client()
        let raw = rpcError { () throws(ClientError) in
            try direct.call("policy.expire", ["older_than": "0s", "dry_run": true])
        }
        // The busy answer leaves the connection serving.
        let pingAfterBusy = try? direct.call("ping")
        // A non-admin asking for an admin run is refused as such, not told to skip.
        let nobodyVacuum = Nobody.canSwitch ? try h.assetctlAsNobody(["vacuum"]) : nil
        // A non-admin's read-only run takes a slot of its own (else it could keep cron's runs
        // out): it runs.
        let nobodyVerify = Nobody.canSwitch ? try h.assetctlAsNobody(["verify"]) : nil
        let stillRunning = first.current == nil
        _ = done.wait(timeout: .now() + 120)
        #expect(stillRunning, "the first run must outlast the others for this test to mean anything")
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stderr.contains("another maintenance run is in progress; skipping"), "\(second.stderr)")
        #expect(second.stderr.contains("policy.enforce"), "names what runs: \(second.stderr)")
        #expect(evict.status == 0 && evict.stderr.contains("skipping"), "\(evict.stderr)")
        #expect(verify.status == 0 && verify.stderr.contains("skipping"), "\(verify.stderr)")
        #expect(raw?.stableCode == "busy" && raw?.data?["detail"]?["running"] == "policy.enforce")
        #expect(pingAfterBusy?["version"] != nil, "the connection still answers after busy")
        if let nobodyVacuum {
            #expect(nobodyVacuum.status == 1 && nobodyVacuum.stderr.contains("admin"), "\(nobodyVacuum.stderr)")
        }
        if let nobodyVerify {
            #expect(
                nobodyVerify.status == 0 && !nobodyVerify.stderr.contains("skipping"),
                "\(nobodyVerify.stdout)\(nobodyVerify.stderr)")
        }
        if case .success(let plan)? = first.current {
            #expect(plan["objects"]?.arrayValue?.count == 1499, "all but the one that fits the 1-byte budget")
        } else {
            Issue.record("the first run failed: \(String(describing: first.current))")
        }
        #expect(try h.assetctl("enforce").status == 0, "the slot is free again")
    }

    @Test("progress notifications come only when asked, carry the request id, and precede the reply")
    func progressBeforeReply() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1, batch: 1))
        try populate(h, count: 300)
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        for (id, asked) in [(7, true), (8, false)] {
            let started = Date()
            raw.send(
                #"{"jsonrpc":"2.0","id":\#(id),"method":"policy.enforce","params":{"dry_run":true,"progress":\#(asked)}}"#
                    + "\n")
            var progress = [JSONValue]()
            var reply: JSONValue?
            while reply == nil, let line = raw.readLine() {
                if line["method"] == "progress" { progress.append(line) } else { reply = line }
            }
            let elapsed = Date().timeIntervalSince(started)
            #expect(reply?["id"] == .int(Int64(id)) && reply?["result"]?["objects"]?.arrayValue?.count == 299)
            if asked {
                #expect(!progress.isEmpty, "a run that reports gets at least its first progress")
                #expect(progress.allSatisfy { $0["params"]?["id"] == .int(Int64(id)) && $0["params"]?["phase"] != nil })
                #expect(Double(progress.count) <= elapsed * 5 + 1, "throttled: \(progress.count) in \(elapsed) s")
            } else {
                #expect(progress.isEmpty, "not asked: \(progress.count) progress lines")
            }
        }
    }

    @Test(
        "on a terminal enforce draws a progress line on stderr and clears it; off a terminal nothing",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a pty"))
    func progressOnTerminal() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1))
        try populate(h, count: 20)
        let command = "\(Binaries.assetctl) --socket \(h.socket) enforce --dry-run"
        let tty = try runProcess("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(tty.status == 0, "\(tty.stderr)")
        #expect(tty.stdout.contains("\renforce: "), "a progress line: \(tty.stdout.debugDescription)")
        #expect(tty.stdout.contains("\r\u{1B}[K"), "cleared at the end")
        let plain = try h.assetctl("enforce", "--dry-run")
        #expect(plain.status == 0 && plain.stderr.isEmpty, "\(plain.stderr.debugDescription)")
        #expect(plain.stdout.contains("would delete 19 objects"), "\(plain.stdout)")
    }

    @Test("a plan's summary counts in the singular for one")
    func planSummarySingular() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1))
        try populate(h, count: 2)
        let r = try h.assetctl("enforce", "--dry-run")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("would delete 1 object and 1 file, freeing "), "\(r.stdout)")
    }

    @Test(
        "on a terminal an index rebuild draws its progress; off a terminal nothing",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a pty"))
    func indexRebuildProgress() throws {
        let h = try DaemonHarness()
        try populate(h, count: 20)
        let def = #"{"name":"dims","version":"1","columns":[{"name":"n","type":"integer","path":"$.n"}]}"#
        let command = "\(Binaries.assetctl) --socket \(h.socket) index define '\(def)'"
        let tty = try runProcess("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(tty.status == 0, "\(tty.stderr)")
        #expect(tty.stdout.contains("\rdefine: rebuild dims"), "a progress line: \(tty.stdout.debugDescription)")
        let plain = try h.assetctl("index", "define", def.replacingOccurrences(of: #""1""#, with: #""2""#))
        #expect(plain.status == 0 && plain.stderr.isEmpty, "\(plain.stderr.debugDescription)")
        #expect(try h.assetctl("index", "ls").stdout.contains("dims  "))
    }

    @Test(
        "with --db the maintenance commands run in-process; while a daemon holds the database they fail, while another --db does they skip with exit 0"
    )
    func offline() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1))
        try populate(h, count: 5)
        let db = ["--db", h.database, "--config", h.configPath]
        // A cron line that repairs or enforces with --db while the daemon runs records no success.
        let daemon = h.process!.processIdentifier  // started
        for args in [["enforce"], ["verify", "--repair"], ["expire", "--older-than", "0s"]] {
            let held = try runProcess(Binaries.assetctl, db + args)
            #expect(held.status == 1, "\(args): \(held.stderr)")
            #expect(!held.stderr.contains("skipping"), "\(args): \(held.stderr)")
            #expect(
                held.stderr.contains("a running assetd (pid \(daemon)) holds this database")
                    && held.stderr.contains("through the daemon's socket (without --db)"), "\(args): \(held.stderr)")
        }
        h.stop()
        // Another assetctl --db (the same engine, opened here) holds it: an overlapping run skips.
        do {
            let other = try LocalInvoker(databasePath: h.database, configPath: h.configPath)
            defer { other.close() }
            #expect(!other.isReadOnly)
            let skipped = try runProcess(Binaries.assetctl, db + ["enforce"])
            #expect(skipped.status == 0, "\(skipped.stderr)")
            #expect(skipped.stderr.contains("another maintenance run is in progress; skipping"), "\(skipped.stderr)")
            #expect(skipped.stderr.contains("another assetctl --db (pid \(getpid()))"), "\(skipped.stderr)")
        }
        // A holder that says only its pid (an older version's lock) is not known to be a run that ends.
        do {
            let fd = open(h.database + ".lock", O_RDWR)
            try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "errno \(errno)")
            defer { close(fd) }
            #expect(ftruncate(fd, 0) == 0 && pwrite(fd, "4242\n", 5, 0) == 5)
            let unknown = try runProcess(Binaries.assetctl, db + ["enforce"])
            // The pid /proc/locks shows holding it, not the one the file names.
            #expect(unknown.status == 1, "\(unknown.stderr)")
            #expect(unknown.stderr.contains("another process (pid \(getpid()))"), "\(unknown.stderr)")
        }
        let alone = try runProcess(Binaries.assetctl, db + ["enforce"])
        #expect(alone.status == 0, "\(alone.stderr)")
        #expect(alone.stdout.contains("deleted 4 objects and 4 files"), "\(alone.stdout)")
        #expect(eventually { (try? FileManager.default.contentsOfDirectory(atPath: h.root + "/s/0").count) == 1 })
    }

    @Test(
        "the lock file's label is believed only of a pid holding the lock: a stale `PID assetctl` held by another process fails, and the file is 0600"
    )
    func staleLabel() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1))
        try populate(h, count: 2)
        h.stop()
        let db = ["--db", h.database, "--config", h.configPath]
        let lock = h.database + ".lock"
        #expect(unlink(lock) == 0, "the daemon's, made under its own umask")
        let first = try runProcess(Binaries.assetctl, db + ["verify"])
        #expect(first.status == 0, "\(first.stderr)")
        // Made 0600 whatever the umask, and an older version's 0644 one narrowed.
        func mode() -> mode_t {
            var st = stat()
            return stat(lock, &st) == 0 ? st.st_mode & 0o777 : 0
        }
        #expect(mode() == 0o600)
        #expect(chmod(lock, 0o644) == 0)
        #expect(try runProcess(Binaries.assetctl, db + ["verify"]).status == 0)
        #expect(mode() == 0o600)
        // The last run left "PID assetctl"; its pid is gone, and this process takes the lock
        // on a descriptor open for reading only, as anyone who can open the file could.
        let label = try String(contentsOfFile: lock, encoding: .utf8)
        #expect(label.hasSuffix(" assetctl\n"), "\(label)")
        let fd = open(lock, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "errno \(errno)")
        defer { close(fd) }
        let held = try runProcess(Binaries.assetctl, db + ["enforce"])  // it has one file to delete
        #expect(held.status == 1, "\(held.stderr)")
        #expect(!held.stderr.contains("skipping"), "\(held.stderr)")
        #expect(held.stderr.contains("another process (pid \(getpid())) holds this database"), "\(held.stderr)")
    }

    @Test(
        "a non-admin is refused real enforce, evict, backup and vacuum but may dry-run",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func nonAdminRefused() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1), controlSection: #"mode = "0666""#)
        try h.client().putFile("media", "n", try h.makeFile("n.bin", size: 10))
        for args in [
            ["enforce"], ["evict", "--bytes", "1"], ["expire", "--older-than", "0s"], ["backup", h.dir + "/b.sqlite"],
            ["vacuum"], ["checkpoint"],
        ] {
            let r = try h.assetctlAsNobody(args)
            #expect(r.status == 1, "\(args): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains("admin"), "\(args): \(r.stderr)")
        }
        #expect(try h.client().getObject("media", "n") != .null, "nothing was deleted")
        let dry = try h.assetctlAsNobody(["enforce", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout.contains("media"), "\(dry.stdout)\(dry.stderr)")
        #expect(try h.assetctlAsNobody(["evict", "--owner", "root", "--dry-run"]).status == 0)
        #expect(
            try h.assetctlAsNobody(["pin", "media", "n"]).status == 0,
            "pins are writes like others without enforce_ownership")
    }
}

extension DaemonHarness {
    /// Runs assetctl as nobody with an argument array.
    func assetctlAsNobody(_ args: [String]) throws -> ProcessResult {
        try runProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetctl, "--socket", socket]
                + args)
    }
}
