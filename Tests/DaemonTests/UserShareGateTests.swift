// A uid held to its share (not an admin) is let in at the parse gate only while what its
// requests hold running stays within the share: its many long lines, each let in under the
// total, no longer fill it with their parsed weight while another user's lines wait. And the
// share of a uid whose last connection closed mid-request goes once that request ends. Lines
// over 64 KiB are held in their parse (ASSETD_DEBUG_HOLD_LONG_PARSE), `object.list` on the
// pool (ASSETD_DEBUG_HOLD_POOL_JOB); `stats.debug.users` counts the shares kept.

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct UserShareGateTests {
    static let socat = "/usr/bin/socat"

    static func zerosPing(id: Int, _ count: Int) -> String {
        let zeros = Array(repeating: "0", count: count).joined(separator: ",")
        return #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n"
    }

    @Test(
        "one user's long lines fill only its share of the gate: another user's lines are still let in",
        .enabled(
            if: Nobody.canSwitch && FileManager.default.isExecutableFile(atPath: socat),
            "needs root, setpriv and socat to act as nobody"))
    func oneUserCannotFillTheGate() throws {
        // Each 300 KB line is let in for 2 MiB (the connection's bound): 4 fill nobody's share
        // of 8 MiB, 7 with root's filled the total.
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"16MiB\"\nconnection_input_bytes = \"2MiB\"",
            start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold]
        try h.start()
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // Root has a long line running (held), so its next lines wait for room.
        let running = try RawConnection(path: h.socket)
        running.setReceiveTimeout(60)
        running.send(Self.zerosPing(id: 0, 100_000))
        #expect(eventually { h.exists(hold + ".held") }, "root's long line reached the hold")

        let flood = h.dir + "/flood"
        #expect(FileManager.default.createFile(atPath: flood, contents: Data(Self.zerosPing(id: 0, 150_000).utf8)))
        var floods: [Process] = []
        defer {
            for p in floods where p.isRunning { p.terminate() }
            for p in floods { p.waitUntilExit() }
        }
        for _ in 0..<8 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Self.socat, "-u", "STDIN",
                "UNIX-CONNECT:" + h.socket,
            ]
            p.standardInput = FileHandle(forReadingAtPath: flood)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            floods.append(p)
        }
        #expect(eventually { floods.allSatisfy { !$0.isRunning } }, "nobody's lines all sent")

        // Root's lines over a kilobyte, on another connection: each waits at the gate, and is
        // let in while the hold stays.
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        for id in 1...50 { raw.send(Self.zerosPing(id: id, 1_000)) }
        for id in 1...50 {
            guard raw.readLine()?["id"] == .int(Int64(id)) else {
                Issue.record("no reply \(id) while nobody's lines are held")
                break
            }
        }
        try FileManager.default.removeItem(atPath: hold)
        #expect(running.readLine()?["id"] == 0)
    }

    @Test("an admin is not held to a share: its connection reads past half the total")
    func adminPassesTheShare() throws {
        let h = try DaemonHarness(
            controlSection: "total_buffer_bytes = \"3MiB\"\nconnection_input_bytes = \"2560KiB\"", start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold]
        try h.start()
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // A request held on the pool, and about 2.2 MB counted behind it: over the 1.5 MiB
        // share, under the connection's bound and the total.
        let list = #"{"jsonrpc":"2.0","id":0,"method":"object.list","params":{"collection":"c"}}"# + "\n"
        let mine = Array((list + (1...2_000).map { Self.zerosPing(id: $0, 450) }.joined()).utf8)
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        var sent = 0
        #expect(
            eventually {
                sent += raw.trySend(mine[sent...])
                return sent == mine.count
            }, "\(sent) of \(mine.count) bytes taken")
        try FileManager.default.removeItem(atPath: hold)
        for id in 0...2_000 {
            guard raw.readLine()?["id"] == .int(Int64(id)) else {
                Issue.record("no reply \(id)")
                break
            }
        }
    }

    @Test(
        "the share of a uid whose last connection closed mid-request goes when the request ends",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to ask as nobody"))
    func shareOfClosedUserGoes() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"", start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        // Asked as nobody: a connection of root's would keep root's share.
        let users = { () -> Int? in
            let out = (try? h.assetctlAsNobody("stats"))?.stdout ?? ""
            let line = out.split(separator: "\n").first { $0.hasPrefix("debug.users ") }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // Root's connection: replies it does not read, then a request held on the pool; closed
        // meanwhile, the write left pending fails and the daemon closes it mid-request.
        var raw: RawConnection? = try RawConnection(path: h.socket)
        let ping = #"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n"
        let list = #"{"jsonrpc":"2.0","id":2,"method":"object.list","params":{"collection":"c"}}"# + "\n"
        let text = Array((String(repeating: ping, count: 20_000) + list).utf8)
        var sent = 0
        #expect(
            eventually {
                sent += raw?.trySend(text[sent...]) ?? 0
                return sent == text.count
            }, "\(sent) of \(text.count) bytes taken")
        #expect(eventually { h.exists(hold + ".held") }, "the list reached the hold")
        raw = nil
        #expect(eventually { users() == 2 }, "root's share kept while its request runs: \(String(describing: users()))")

        try FileManager.default.removeItem(atPath: hold)
        #expect(eventually { users() == 1 }, "root's share went: \(String(describing: users()))")
    }
}
#endif
