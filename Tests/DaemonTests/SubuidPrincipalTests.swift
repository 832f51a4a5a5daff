// A user's subordinate uids (control.subuid_file, assetd(8) Access) count as that user for the
// per-uid bounds: a user in a user namespace connects as any of its 65,536 subuids, and each
// counted apart took every non-admin connection slot. Admin status stays the real uid's: a
// subuid of root's range counts with root and is exempt from nothing. Also the total of the
// non-admins' read-only maintenance runs.

import AssetClient
import AssetStore
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct SubuidRangesTests {
    @Test("subuid lines are read; a range is one principal of its own, its first uid, whoever owns it")
    func rangesRead() {
        let text = """
            alice:100000:65536
            # a comment

            2000:200000:10
            bob:300000:10
            alice:100
            alice:x:10
            alice:400000:0
            alice:4294967290:10
            2000:100005:10
            """
        let r = SubordinateRanges(text: text, uid: { ["alice": 1000][$0] })
        // bob is in no user database (podman's `containers` often is not): his range is kept.
        #expect(r.ranges.map(\.first) == [100_000, 200_000, 300_000])
        #expect(r.skipped.count == 5, "\(r.skipped)")
        #expect(r.principal(of: 99_999) == 99_999)
        #expect(r.principal(of: 100_000) == 100_000 && r.principal(of: 165_535) == 100_000)
        #expect(r.principal(of: 165_536) == 165_536)
        #expect(r.principal(of: 200_009) == 200_000 && r.principal(of: 200_010) == 200_010)
        #expect(r.principal(of: 300_009) == 300_000)
        // No real user's uid is a range's key: the owners count apart from their ranges.
        #expect(r.principal(of: 1000) == 1000 && r.principal(of: 2000) == 2000)
        #expect(r.principal(of: 0) == 0 && r.principal(of: UInt32.max) == UInt32.max)
        #expect(SubordinateRanges.load(path: "/nonexistent/subuid").ranges.isEmpty)
        #expect(SubordinateRanges.load(path: "").skipped.isEmpty)
    }

    @Test("CRLF lines are read, numbers are digits only, an overlap keeps its own part, uid 0 is refused")
    func oddLines() {
        let text =
            "alice:100000:10\r\n+1000:300000:10\r\nalice:+400000:10\r\nalice:500000:+5\n-0:600000:10\n"
            + "alice:600005:10\nalice:600001:3\nroot:0:65536\n"
        let r = SubordinateRanges(text: text, uid: { ["alice": 1000, "root": 0][$0] })
        #expect(r.ranges.map(\.first) == [100_000, 300_000, 600_000, 600_010], "\(r.ranges) \(r.skipped)")
        #expect(r.principal(of: 100_009) == 100_000 && r.principal(of: 300_001) == 300_000)
        #expect(r.principal(of: 400_000) == 400_000 && r.principal(of: 500_001) == 500_001)
        #expect(r.principal(of: 600_009) == 600_000 && r.principal(of: 600_014) == 600_010)
        #expect(r.principal(of: 5) == 5 && r.principal(of: 0) == 0)
        // +400000, +5, the range inside another, and root's uid 0.
        #expect(r.skipped.count == 4, "\(r.skipped)")
        // The owners in no user database (+1000, -0) and the overlap cut are noted, once each.
        #expect(r.notes.count == 3, "\(r.notes)")
        // A range holding the daemon's uid or an admin uid is refused too.
        let admins = SubordinateRanges(text: "a:1000:10\nb:2000:10\n", refusing: [1009], uid: { _ in nil })
        #expect(admins.ranges.map(\.first) == [2000] && admins.skipped.count == 1, "\(admins.skipped)")
    }

    @Test("a range holding a user's uid is refused, and a file another user could write is not read")
    func rangesOfUsersAndForeignFiles() throws {
        // evil:2001:1001 would count uid 3001, another user, with 2001's range.
        let r = SubordinateRanges(text: "evil:2001:1001\nalice:100000:10\n", users: [1000, 3001], uid: { _ in nil })
        #expect(r.ranges.map(\.first) == [100_000], "\(r.skipped)")
        #expect(r.skipped.first?.contains("holds uid 3001") == true, "\(r.skipped)")
        let dir = NSTemporaryDirectory() + "subuid-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subuid"
        try "alice:100000:10\n".write(toFile: file, atomically: false, encoding: .utf8)
        #expect(chmod(file, 0o644) == 0)
        #expect(SubordinateRanges.load(path: file).ranges.count == 1)
        #expect(chmod(file, 0o666) == 0)
        let open = SubordinateRanges.load(path: file)
        #expect(open.ranges.isEmpty && open.skipped.first?.contains("not read") == true, "\(open.skipped)")
    }

    @Test("control.subuid_file defaults to /etc/subuid, \"\" turns it off, and a relative path is refused")
    func configured() throws {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        let parse = { (text: String) throws(ConfigError) -> DaemonConfig in
            try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: defaults)
        }
        #expect(try parse("").subuidFile == "/etc/subuid")
        #expect(try parse("[control]\nsubuid_file = \"\"").subuidFile == "")
        #expect(try parse("[control]\nsubuid_file = \"\"").summary.contains("control.subuid_file = (none)"))
        #expect(try parse("[control]\nsubuid_file = \"/srv/subuid\"").subuidFile == "/srv/subuid")
        #expect(throws: ConfigError.self) { try parse("[control]\nsubuid_file = \"subuid\"") }
        #expect(throws: ConfigError.self) { try parse("[control]\nsubuid_file = 3") }
    }

    @Test("non-admins' read-only maintenance runs are bounded in total, each principal to one")
    func readOnlyTotal() throws {
        let slot = MaintenanceSlot(readOnlyTotal: 2)
        let a = try slot.claim("verify", readOnly: 1).get()
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 1).get() }
        _ = try slot.claim("verify", readOnly: 2).get()
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("policy.expire", readOnly: 3).get() }
        let admins = try slot.claim("vacuum").get()  // the admins' slot is not one of them
        slot.end(a)
        _ = try slot.claim("verify", readOnly: 3).get()
        slot.end(admins)
    }

    @Test("a read-only slot freed at the total goes to a user refused before, not to the one that held it")
    func readOnlyTotalTakesTurns() throws {
        let clock = Box<Double>()
        clock.value = 0
        let slot = MaintenanceSlot(readOnlyTotal: 2, now: { clock.value! })
        let a = try slot.claim("verify", readOnly: 1).get()
        _ = try slot.claim("verify", readOnly: 2).get()
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 3).get() }
        // 1 loops verify: its run ends and it asks again in the same pass of the loop.
        slot.end(a)
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 1).get() }
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 4).get() }
        let c = try slot.claim("verify", readOnly: 3).get()
        slot.end(c)
        // None refused waits now: anyone may take it.
        let again = try slot.claim("verify", readOnly: 1).get()
        // One refused that does not ask again keeps the freed slot idle only for a while.
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 5).get() }
        slot.end(again)
        #expect(throws: MaintenanceSlot.Busy.self) { try slot.claim("verify", readOnly: 1).get() }
        clock.value = MaintenanceSlot.patience
        _ = try slot.claim("verify", readOnly: 1).get()
    }
}

@Suite struct SubuidPrincipalTests {
    /// Runs `steps` as root, each `[connection, uid, method]`: a connection is opened at its
    /// first step with that effective uid and gid (uid 0: root's own), and each step's request
    /// answered before the next. One line an answer: `ok`, or its error's data code and message.
    static func steps(_ h: DaemonHarness, _ steps: [(String, UInt32, String)]) throws -> [String] {
        let steps = steps.map { JSONValue.array([.string($0.0), .int(Int64($0.1)), .string($0.2)]) }
        let script = """
            import json, os, socket, sys
            conns = {}
            for name, uid, method in json.loads(sys.argv[2]):
                if name not in conns:
                    if uid: os.setegid(uid); os.seteuid(uid)
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                    if uid: os.seteuid(0); os.setegid(0)
                    conns[name] = (s, s.makefile("rb"))
                s, f = conns[name]
                try: s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode() + b"\\n")
                except OSError: pass  # refused at accept: its answer is already there to read
                while True:
                    m = json.loads(f.readline())
                    if "id" in m: break
                e = m.get("error")
                print("ok" if e is None else "%s %s" % (e.get("data", {}).get("code"), e["message"]), flush=True)
            """
        let r = try runProcess("/usr/bin/python3", ["-c", script, h.socket, JSONValue.array(steps).serialized()])
        #expect(r.status == 0, "\(r)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    /// A daemon whose subuid file (written first if `ranges` is given) is `subuid` in its folder.
    static func daemon(
        _ ranges: String?, _ control: String = "", environment: [String: String] = [:]
    ) throws -> DaemonHarness {
        let h = try DaemonHarness(start: false)
        if let ranges { try ranges.write(toFile: h.dir + "/subuid", atomically: true, encoding: .utf8) }
        h.controlSection = "mode = \"0666\"\nsubuid_file = \"\(h.dir)/subuid\"\n" + control
        h.environment = environment
        try h.writeConfig()
        try h.start()
        return h
    }

    @Test(
        "a user's subuids share its connections and watchers; another user still connects",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func subuidsShareTheOwnersBounds() throws {
        let h = try Self.daemon("\(Nobody.name):200000:1000\n", "max_connections_per_uid = 3\nmax_watchers_per_uid = 1")
        #expect(h.log.contains("\(h.dir)/subuid: 1 subordinate uid ranges"), "\(h.log)")
        let answers = try Self.steps(
            h,
            [
                ("a", 200_000, "ping"), ("b", 200_001, "ping"), ("c", 200_999, "ping"), ("d", 200_003, "ping"),
                ("n", Nobody.uid, "ping"), ("other", 3001, "ping"), ("a", 200_000, "watch"),
                ("b", 200_001, "watch"), ("other", 3001, "watch"),
            ])
        #expect(answers.count == 9, "\(answers)")
        #expect(answers.prefix(3) == ["ok", "ok", "ok"], "\(answers)")
        let refused = "busy too many connections for uid 200003 (subuid range 200000-200999)"
        #expect(answers.dropFirst(3).first?.hasPrefix(refused) == true, "\(answers)")
        // The owner is a user of its own, apart from its range.
        #expect(answers.dropFirst(4).first == "ok", "\(answers)")
        // Watchers too: a's watch takes the one place, b's (another subuid) is refused, and
        // another user's is not.
        let watchBusy = "busy too many watching connections for uid 200001 (control.max_watchers_per_uid)"
        #expect(Array(answers.dropFirst(5)) == ["ok", "ok", watchBusy, "ok"], "\(answers)")
        #expect(h.log.contains("refusing a connection: uid 200003 (subuid range 200000-200999) holds 3"), "\(h.log)")
    }

    @Test(
        "root's range is a user of its own: root's connections do not lock it out, and it is no admin",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func rootsRangeIsAUserOfItsOwn() throws {
        let h = try Self.daemon("root:300000:1000\n", "max_connections_per_uid = 3")
        // Root holds 4 connections (an admin: past the cap); its range still has its own 3.
        let admin = try h.client()
        #expect(eventually { (try? admin.call("stats")["connections"]) == 1 })
        let answers = try Self.steps(
            h,
            [
                ("root1", 0, "ping"), ("root2", 0, "ping"), ("root3", 0, "ping"),
                ("r1", 300_000, "ping"), ("r2", 300_001, "ping"), ("r3", 300_002, "ping"), ("r4", 300_003, "ping"),
                ("root4", 0, "ping"), ("r1", 300_000, "vacuum"),
            ])
        #expect(answers.count == 9, "\(answers)")
        #expect(answers.prefix(6) == ["ok", "ok", "ok", "ok", "ok", "ok"], "\(answers)")
        let refused = "busy too many connections for uid 300003 (subuid range 300000-300999)"
        #expect(answers.dropFirst(6).first?.hasPrefix(refused) == true, "\(answers)")
        #expect(answers.dropFirst(7).first == "ok", "root itself is an admin: past the cap")
        #expect(answers.last == "permission_denied vacuum is for admins only", "\(answers)")
    }

    @Test(
        "SIGHUP reads the subuid file again: connections made after count by its ranges",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func reloadReadsTheFile() throws {
        let h = try Self.daemon(nil, "max_connections_per_uid = 3")  // no file: no ranges
        let before = try Self.steps(h, (0..<4).map { ("b\($0)", UInt32(210_000 + $0), "ping") })
        #expect(before == ["ok", "ok", "ok", "ok"])
        try "\(Nobody.name):210000:100\nbogus\n".write(toFile: h.dir + "/subuid", atomically: true, encoding: .utf8)
        try h.reload()
        #expect(h.log.contains("\(h.dir)/subuid: line 2: not owner:first:count"), "\(h.log)")
        let after = try Self.steps(h, (0..<4).map { ("a\($0)", UInt32(210_010 + $0), "ping") })
        #expect(after.prefix(3) == ["ok", "ok", "ok"], "\(after)")
        let refused = "busy too many connections for uid 210013 (subuid range 210000-210099)"
        #expect(after.last?.hasPrefix(refused) == true, "\(after)")
    }

    @Test(
        "SIGHUP closes the connections a new range counts as another user: they free their slots",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func reloadClosesMovedConnections() throws {
        let h = try Self.daemon(nil, "max_connections_per_uid = 3")  // no file: no ranges
        let script = """
            import json, os, socket, sys
            conns = []
            for uid in (215001, 215002, 215003):  # the first, 215000, is the range's key already
                os.setegid(uid); os.seteuid(uid)
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                os.seteuid(0); os.setegid(0)
                s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\\n')
                s.makefile("rb").readline()
                conns.append(s)
            print("open", flush=True)
            for s in conns:
                while s.recv(4096): pass
            print("all closed", flush=True)
            """
        let held = try BackgroundProcess("/usr/bin/python3", ["-c", script, h.socket])
        defer { held.stop() }
        #expect(held.waitForLine { $0 == "open" }, "\(held.output)")
        let admin = try h.client()
        #expect(eventually { (try? admin.call("stats")["connections"]) == 4 })
        // A range not in the file before: its 3 connections, counted as 3 users, are closed.
        try "\(Nobody.name):215000:100\n".write(toFile: h.dir + "/subuid", atomically: true, encoding: .utf8)
        try h.reload()
        #expect(held.waitForLine { $0 == "all closed" }, "\(held.output)")
        #expect(h.log.contains("closing 3 connections that control.subuid_file now counts as another user"), "\(h.log)")
        #expect(eventually { (try? admin.call("stats")["connections"]) == 1 })
        // A reload that changes no range closes none.
        try h.reload()
        #expect((try? admin.call("stats")["connections"]) == 1)
    }

    @Test(
        "a user's subuids share its half of the lease entries; another user's lease is granted",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func subuidsShareTheLeaseShare() throws {
        let h = try Self.daemon(
            "\(Nobody.name):220000:100\n", "max_lease_entries_per_connection = 4\ntotal_lease_entries = 8")
        let first = try LeaseUserShareTests.asUser(220_000, [h.socket, "1", "4", "a"])
        defer { first.stop() }
        #expect(first.waitForLine { $0 == "done" }, "\(first.output)")
        #expect(first.output.first?.contains(#""lease":"#) == true, "\(first.output)")
        let second = try LeaseUserShareTests.asUser(220_001, [h.socket, "1", "4", "b"])
        defer { second.stop() }
        #expect(second.waitForLine { $0 == "done" }, "\(second.output)")
        #expect(second.output.first?.contains("this user's leases") == true, "\(second.output)")
        let other = try LeaseUserShareTests.asUser(LeaseUserShareTests.otherUID, [h.socket, "1", "4", "o"])
        defer { other.stop() }
        #expect(other.waitForLine { $0 == "done" }, "\(other.output)")
        #expect(other.output.first?.contains(#""lease":"#) == true, "\(other.output)")
    }

    #if DEBUG
    @Test(
        "the uids of one range share one read-only maintenance slot; another user's runs beside",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func rangeSharesTheReadOnlySlot() throws {
        let hold = "/tmp/assetd-verify-hold-range-\(getpid())"
        let h = try Self.daemon(
            "\(Nobody.name):240000:100\n",
            environment: ["UV_THREADPOOL_SIZE": "6", "ASSETD_DEBUG_STATS": "1", "ASSETD_DEBUG_HOLD_POOL_JOB": hold])
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: hold) }
        let script = """
            import json, os, select, socket, sys
            def connect(uid):
                if uid: os.setegid(uid); os.seteuid(uid)
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                if uid: os.seteuid(0); os.setegid(0)
                return s
            def call(s, method):
                s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode() + b"\\n")
            def answer(f):
                m = json.loads(f.readline())
                e = m.get("error")
                return "ok" if e is None else "%s %s" % (e.get("data", {}).get("code"), e["message"])
            admin = connect(0); af = admin.makefile("rb")
            def running():
                call(admin, "stats")
                return json.loads(af.readline())["result"]["debug"]["read_only_maintenance"]
            first, second, other = connect(240000), connect(240001), connect(41020)
            call(first, "verify")
            while running() != 1: pass  # each a round trip
            call(second, "verify")
            sf = second.makefile("rb")
            while True:
                if select.select([second], [], [], 0)[0]:
                    print(answer(sf)); break
                if running() == 2:
                    print("ran"); break
            call(other, "verify")
            while running() < 2: pass
            print("other runs beside")
            os.unlink(sys.argv[2])
            print(answer(first.makefile("rb")), answer(other.makefile("rb")))
            """
        let r = try runProcess("/usr/bin/python3", ["-c", script, h.socket, hold], timeout: 120)
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines == ["busy another maintenance run is in progress: verify", "other runs beside", "ok ok"], "\(r)")
    }

    @Test(
        "read-only maintenance runs of many users are bounded in total: past it, busy",
        .enabled(if: Nobody.canSwitch, "needs root to act as other users"))
    func readOnlyRunsHaveATotal() throws {
        // 6 threads: 3 read-only runs at once, and a thread left for stats with a fourth held.
        let hold = "/tmp/assetd-verify-hold-\(getpid())"
        let h = try Self.daemon(
            nil,
            environment: ["UV_THREADPOOL_SIZE": "6", "ASSETD_DEBUG_STATS": "1", "ASSETD_DEBUG_HOLD_POOL_JOB": hold])
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: hold) }
        let script = """
            import json, os, select, socket, sys
            def connect(uid):
                if uid: os.setegid(uid); os.seteuid(uid)
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                if uid: os.seteuid(0); os.setegid(0)
                return s
            def call(s, method):
                s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode() + b"\\n")
            def answer(f):
                m = json.loads(f.readline())
                e = m.get("error")
                return "ok" if e is None else "%s %s" % (e.get("data", {}).get("code"), e["message"])
            admin = connect(0); af = admin.makefile("rb")
            def running():
                call(admin, "stats")
                return json.loads(af.readline())["result"]["debug"]["read_only_maintenance"]
            users = [connect(41001 + i) for i in range(4)]
            for s in users[:3]: call(s, "verify")
            while running() != 3: pass  # each a round trip
            call(users[3], "verify")
            last = users[3].makefile("rb")
            while True:
                if select.select([users[3]], [], [], 0)[0]:
                    print(answer(last)); break
                if running() == 4:
                    print("ran"); break
            os.unlink(sys.argv[2])
            for s in users[:3]: print(answer(s.makefile("rb")))
            """
        let r = try runProcess("/usr/bin/python3", ["-c", script, h.socket, hold], timeout: 120)
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "busy another maintenance run is in progress: 3 read-only runs of other users", "\(r)")
        #expect(Array(lines.dropFirst()) == ["ok", "ok", "ok"], "\(r)")
    }
    #endif
}
