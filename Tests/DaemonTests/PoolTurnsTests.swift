// The thread pool takes clients' jobs in turn by uid, at most half its threads for one uid
// while another's job waits and all but one for all clients (assetd(8), CONTROL PROTOCOL): one
// user with more jobs than the pool has threads keeps neither another user's delete (past one
// of its jobs' end) nor the daemon's own sweep waiting, and a user alone has every client
// thread. Debug builds of assetd hold a long line's parse on the pool while the file
// ASSETD_DEBUG_HOLD_LONG_PARSE names exists, making FILE.held-N as the Nth gets there;
// FILE.release-N lets the Nth go.

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct PoolTurnsTests {
    /// Another user than nobody, with no passwd entry and not an admin.
    static let otherUID: UInt32 = 65533

    /// Runs python3 `script` as `uid` (its gid the same, no other groups) in the background.
    static func asUser(_ uid: UInt32, _ script: String, _ args: [String]) throws -> BackgroundProcess {
        try BackgroundProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", script] + args)
    }

    /// Opens `argv[2]` connections, sends on each a ping line of about 100 KB (parsed on the
    /// pool), prints "sent", then reads every answer and prints "answered".
    static let longLines = """
        import socket, sys
        params = ",".join('"p%d":%d' % (i, i) for i in range(6000))
        conns = []
        for i in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(('{"jsonrpc":"2.0","id":%d,"method":"ping","params":{%s}}\\n' % (i, params)).encode())
            conns.append(s)
        print("sent", flush=True)
        for s in conns:
            data = b""
            while not data.endswith(b"\\n"):
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
        print("answered", flush=True)
        """

    /// A daemon on a pool of 4 threads (2 a uid, 3 for clients), the hold file in place.
    static func heldDaemon(_ control: String = "", debugStats: Bool = false) throws -> (DaemonHarness, hold: String) {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\n" + control, start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "UV_THREADPOOL_SIZE": "4"]
        if debugStats { h.environment["ASSETD_DEBUG_STATS"] = "1" }
        try h.start()
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        return (h, hold)
    }

    /// The clients' jobs on the pool and waiting for their turn, from `stats` (not counting
    /// itself: it has ended when they are counted), on
    /// a connection of its own: nil if it is not answered within 5 s.
    static func poolJobs(_ h: DaemonHarness) -> (running: Int64, queued: Int64)? {
        guard let c = try? h.client(timeout: 5) else { return nil }
        defer { c.close() }
        guard let pool = try? c.call("stats")["pool"], let r = pool["running"]?.intValue,
            let q = pool["queued"]?.intValue
        else { return nil }
        return (r, q)
    }

    @Test(
        "one user holding more pool jobs than the pool has threads leaves another's delete a thread",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func anotherUserIsAnswered() throws {
        let (h, hold) = try Self.heldDaemon()
        let flood = try Self.asUser(Nobody.uid, Self.longLines, [h.socket, "8"])
        defer { flood.stop() }
        // Alone, nobody has all 3 client threads (a stats call would wait for a turn too).
        #expect(eventually { h.exists(hold + ".held-3") }, "\(flood.output)")

        let delete = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1])
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"object.delete","params":{"collection":"c","key":"k"}}\\n')
            print("sent", flush=True)
            data = b""
            try:
                while not data.endswith(b"\\n"):
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
            except socket.timeout:
                pass
            print(data.decode().strip() or "no answer", flush=True)
            """
        let other = try Self.asUser(Self.otherUID, delete, [h.socket])
        #expect(eventually { other.output.contains("sent") })
        // The delete is taken when one of nobody's jobs ends, not behind nobody's 5 waiting.
        // (Two tries: one release may come before the daemon has read the delete.)
        for n in 1...2 where other.output.count < 2 {
            #expect(FileManager.default.createFile(atPath: hold + ".release-\(n)", contents: nil))
            #expect(eventually { other.output.count >= 2 || h.exists(hold + ".held-\(n + 3)") })
        }
        #expect(eventually(timeout: 90) { other.output.count >= 2 })
        #expect(other.output.joined().contains(#""id":1"#), "\(other.output)")
        #expect(!flood.output.contains("answered"), "nobody's jobs were still held")

        try FileManager.default.removeItem(atPath: hold)
        #expect(eventually { flood.output.contains("answered") })
        #expect(eventually { Self.poolJobs(h).map { $0.running == 0 && $0.queued == 0 } == true })
    }

    @Test(
        "while clients' jobs fill their share of the pool, the daemon's sweep still unlinks",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func sweepKeepsAThread() throws {
        let (h, hold) = try Self.heldDaemon()
        let admin = try h.client(timeout: 60)
        let file = try h.makeFile("swept.bin")
        try admin.putObject("c", "k", ["file": .string(file)])
        // nobody's 2 long lines held on the pool; the other user's 2: one more held (the
        // third), which fills the clients' share, one waiting.
        let flood = try Self.asUser(Nobody.uid, Self.longLines, [h.socket, "2"])
        defer { flood.stop() }
        #expect(eventually { h.exists(hold + ".held-2") }, "nobody's two lines reached the hold")
        let other = try Self.asUser(Self.otherUID, Self.longLines, [h.socket, "2"])
        defer { other.stop() }
        #expect(eventually { h.exists(hold + ".held-3") }, "the other user's line reached the hold")

        // The put commits in the group commit (threads of its own); the sweep runs on the pool.
        try admin.putObject("c", "k", [:])
        #expect(eventually { !h.exists(file) }, "the sweep unlinked the file no object holds")
        try FileManager.default.removeItem(atPath: hold)
        for f in [flood, other] { #expect(eventually { f.output.contains("answered") }) }
    }

    @Test(
        "one user alone has all the clients' threads",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func aloneTakesTheClientsShare() throws {
        let (h, hold) = try Self.heldDaemon()
        let flood = try Self.asUser(Nobody.uid, Self.longLines, [h.socket, "4"])
        defer { flood.stop() }
        #expect(eventually { h.exists(hold + ".held-3") }, "a third line reached the hold")
        try FileManager.default.removeItem(atPath: hold)
        #expect(eventually { flood.output.contains("answered") })
        #expect(eventually { Self.poolJobs(h).map { $0.running == 0 && $0.queued == 0 } == true })
    }

    @Test(
        "once stopping, waiting clients' jobs take the thread the caps kept",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func stopLiftsTheCaps() throws {
        let (h, hold) = try Self.heldDaemon()
        let flood = try Self.asUser(Nobody.uid, Self.longLines, [h.socket, "4"])
        defer { flood.stop() }
        #expect(eventually { h.exists(hold + ".held-3") }, "three lines reached the hold")
        let admin = try h.client(timeout: 60)
        _ = try admin.call("shutdown")
        #expect(eventually { h.exists(hold + ".held-4") }, "the fourth went to the kept thread")
        try FileManager.default.removeItem(atPath: hold)
        #expect(h.stop() == 0)
    }
}
#endif
