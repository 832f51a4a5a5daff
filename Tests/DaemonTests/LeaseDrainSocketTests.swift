// Over the socket: a lease of a user with a quota waits for that user's write already under
// way when it is asked for, and counts it: a put held in the group commit, an edge.add held on
// the pool (each sent while the user held no lease, so not counted itself). Debug builds hold
// the write (ASSETD_DEBUG_HOLD_COMMIT, ASSETD_DEBUG_HOLD_POOL_JOB) and show the lease waiting
// (`stats.debug.leases_draining`). It does not wait for another user's puts in the group commit
// (which a batch may defer, batch after batch). And at a stop, a call waiting its user's turn is
// answered `shutting_down`, not run.

@testable import AssetDaemon
import AssetClient
import ControlProtocol
import Foundation
import JSON
import Testing

@Suite(.serialized) struct LeaseDrainSocketTests {
    /// Two connections to argv[1]: sends argv[3] on the first, waits for the file argv[2] (the
    /// write held), sends argv[4] on the second, prints "sent", then both replies and "done".
    static let script = """
        import ctypes, os, socket, sys
        def wait_for(path):
            # Blocks on inotify until `path` is made (created or renamed in), no polling.
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_CLOEXEC)
            libc.inotify_add_watch(fd, os.path.dirname(path).encode(), 0x100 | 0x80)
            while not os.path.exists(path): os.read(fd, 4096)
            os.close(fd)
        def connect():
            s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1]); return s
        first, second = connect(), connect()
        first.sendall(sys.argv[3].encode() + b"\\n")
        wait_for(sys.argv[2])
        second.sendall(sys.argv[4].encode() + b"\\n")
        print("sent", flush=True)
        for s in (first, second): print(s.makefile("rb").readline().decode().strip(), flush=True)
        print("done", flush=True)
        """

    private static func line(_ method: String, _ params: JSONValue) -> String {
        let request: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        return request.serialized()
    }

    /// Nobody's `write` (given c.bin, 200 bytes), held by the file `hold` names, then its lease
    /// of object o on another connection under a quota of 150; the lease's reply.
    private func leaseBehind(holdVariable: String, write: (_ cBin: String) -> String) throws -> String {
        let h = try DaemonHarness(
            extraConfig: "[policy]\n[[policy.quota]]\nowner = \"nobody\"\nmax_bytes = 150\n",
            controlSection: "mode = \"0666\"\nenforce_ownership = true", start: false)
        let hold = h.dir + "/hold"
        h.environment = [holdVariable: hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let folder = h.root + "/nobody"
        let c = try h.makeFile("nobody/c.bin", size: 200)
        for path in [folder, c] { #expect(chown(path, Nobody.uid, Nobody.uid) == 0) }
        let admin = try h.client()
        _ = try admin.call("object.put", ["collection": "c", "key": "o", "value": [:], "owner": "nobody"])
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let lease = Self.line("lease.acquire", ["objects": [["collection": "c", "key": "o"]], "ttl": "1h"])
        let p = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.script, h.socket, hold + ".held", write(c), lease,
            ])
        #expect(p.waitForLine { $0 == "sent" }, "\(p.output)")
        // The lease waits for the write; without that wait it would be counted at once.
        let draining = eventually { (try? admin.call("stats")["debug"]?["leases_draining"]) == 1 }
        #expect(draining, "the lease does not wait for the write")
        try FileManager.default.removeItem(atPath: hold)
        #expect(p.waitForLine { $0 == "done" }, "\(p.output)")
        p.stop()
        let out = p.output
        #expect(out.count == 4 && out[1].contains("\"result\""), "\(out)")
        return out.count > 2 ? out[2] : ""
    }

    @Test(
        "a lease counts its user's put held in the group commit",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func afterPut() throws {
        let reply = try leaseBehind(holdVariable: "ASSETD_DEBUG_HOLD_COMMIT") { c in
            Self.line("object.put", ["collection": "c", "key": "o", "value": ["file": .string(c)]])
        }
        #expect(reply.contains("lease_limit"), "\(reply)")
    }

    @Test(
        "a lease counts its user's edge.add running on the pool",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func afterEdge() throws {
        let reply = try leaseBehind(holdVariable: "ASSETD_DEBUG_HOLD_POOL_JOB") { c in
            Self.line(
                "edge.add",
                [
                    "name": "e", "source": ["collection": "c", "key": "o"], "destination": ["file": .string(c)],
                    "rules": [],
                ])
        }
        #expect(reply.contains("lease_limit"), "\(reply)")
    }

    @Test(
        "a lease does not wait for another user's puts held in the group commit",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func notOtherUsersPuts() throws {
        let h = try DaemonHarness(
            extraConfig: "[policy]\n[[policy.quota]]\nowner = \"nobody\"\nmax_bytes = 150\n",
            controlSection: "mode = \"0666\"\nenforce_ownership = true", start: false)
        let hold = h.dir + "/hold"
        h.environment = ["ASSETD_DEBUG_HOLD_COMMIT": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        defer { _ = h.stop() }
        let admin = try h.client()
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: hold) }
        // Another user's put, held in the group commit.
        let put = Self.line("object.put", ["collection": "c", "key": "a", "value": [:]])
        let other = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(LeaseUserShareTests.otherUID)", "--regid=\(LeaseUserShareTests.otherUID)",
                "--clear-groups", "/usr/bin/python3", "-c", BatchShareSocketTests.script, h.socket, put,
            ])
        defer { other.stop() }
        #expect(other.waitForLine { $0 == "sent" }, "\(other.output)")
        #expect(eventually { (try? admin.call("stats")["debug"]?["puts_waiting"]) == 1 })
        // Nobody's lease (its quota counts it) is answered while that put is still held.
        let lease = try LeaseUserShareTests.asUser(Nobody.uid, [h.socket, "1", "1", "n"])
        defer { lease.stop() }
        #expect(lease.waitForLine { $0 == "done" }, "the lease waits for another user's put")
        #expect(lease.output.first?.contains(#""lease":"#) == true, "\(lease.output)")
        #expect((try? admin.call("stats")["debug"]?["puts_waiting"]) == 1)
        try FileManager.default.removeItem(atPath: hold)
        #expect(other.waitForLine { $0 == "done" }, "\(other.output)")
        #expect(other.output.dropFirst().first?.contains("\"commit\"") == true, "\(other.output)")
    }

    /// On argv[1]: a lease (answered), then an edge.add left running; once the file argv[2]
    /// exists (the edge.add held), a lease on a second connection; prints "sent", then the
    /// two replies outstanding and "done".
    static let queued = """
        import ctypes, os, socket, sys
        def wait_for(path):
            # Blocks on inotify until `path` is made (created or renamed in), no polling.
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_CLOEXEC)
            libc.inotify_add_watch(fd, os.path.dirname(path).encode(), 0x100 | 0x80)
            while not os.path.exists(path): os.read(fd, 4096)
            os.close(fd)
        def connect():
            s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1]); return s
        first, second = connect(), connect()
        replies = first.makefile("rb")
        first.sendall(sys.argv[3].encode() + b"\\n")
        print(replies.readline().decode().strip(), flush=True)
        first.sendall(sys.argv[4].encode() + b"\\n")
        wait_for(sys.argv[2])
        second.sendall(sys.argv[3].encode() + b"\\n")
        print("sent", flush=True)
        print(replies.readline().decode().strip(), flush=True)
        print(second.makefile("rb").readline().decode().strip(), flush=True)
        print("done", flush=True)
        """

    @Test(
        "at a stop, a call waiting its user's turn is answered shutting_down, not run",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func stopDropsQueued() throws {
        let h = try DaemonHarness(
            extraConfig: "[policy]\n[[policy.quota]]\nowner = \"nobody\"\nmax_bytes = 150\n",
            controlSection: "mode = \"0666\"\nenforce_ownership = true", start: false)
        let hold = h.dir + "/hold"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.makeFile("nobody/c.bin", size: 10)
        for path in [h.root + "/nobody", c] { #expect(chown(path, Nobody.uid, Nobody.uid) == 0) }
        let admin = try h.client()
        _ = try admin.call("object.put", ["collection": "c", "key": "o", "value": [:], "owner": "nobody"])
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let lease = Self.line("lease.acquire", ["objects": [["collection": "c", "key": "o"]], "ttl": "1h"])
        let edge = Self.line(
            "edge.add",
            ["name": "e", "source": ["collection": "c", "key": "o"], "destination": ["file": .string(c)], "rules": []])
        let p = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.queued, h.socket, hold + ".held", lease, edge,
            ])
        #expect(p.waitForLine { $0 == "sent" }, "\(p.output)")
        // The second lease waits behind the edge.add (a leaseholder's write, in its turn).
        #expect(eventually { (try? admin.call("stats")["debug"]?["turns_waiting"]) == 1 })
        kill(h.process!.processIdentifier, SIGTERM)
        #expect(eventually { (try? admin.call("stats")) == nil }, "stopping: new requests refused")
        try FileManager.default.removeItem(atPath: hold)
        #expect(p.waitForLine { $0 == "done" }, "\(p.output)")
        p.stop()
        let out = p.output
        #expect(out.count == 5 && out[0].contains("\"result\"") && out[2].contains("\"result\""), "\(out)")
        #expect(out.count == 5 && out[3].contains("shutting_down"), "\(out)")
        #expect(h.stop(signal: 0) == 0)
    }
}
