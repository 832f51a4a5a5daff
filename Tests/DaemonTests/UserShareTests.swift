// Each uid's connections may hold half of control.total_buffer_bytes together: one user's many
// connections, reading as fast as they can, no longer fill the total and pause every other
// user's connection that holds a request waiting. The other user here connects through socat
// run as nobody; its requests are held on the pool (ASSETD_DEBUG_HOLD_POOL_JOB, debug builds).

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct UserShareTests {
    static let socat = "/usr/bin/socat"

    @Test(
        "one user's connections cannot fill the total: another user's pipelined requests are still read",
        .enabled(
            if: Nobody.canSwitch && FileManager.default.isExecutableFile(atPath: socat),
            "needs root, setpriv and socat to act as nobody"))
    func oneUserCannotFillTheTotal() throws {
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"3MiB\"\nconnection_input_bytes = \"2MiB\"",
            start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let list = #"{"jsonrpc":"2.0","id":0,"method":"object.list","params":{"collection":"c"}}"# + "\n"
        let zeros = Array(repeating: "0", count: 450).joined(separator: ",")
        let ping = { (id: Int) in #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n" }
        // Nobody's two connections each send a request held on the pool and 1.5 MB behind it:
        // under a connection's bound, together over the total. (Two: the held jobs take pool
        // threads, and `stats` and this user's request need one each.)
        let flood = h.dir + "/flood"
        let floodText = list + (1...1_500).map(ping).joined()
        #expect(FileManager.default.createFile(atPath: flood, contents: Data(floodText.utf8)))
        var floods: [Process] = []
        defer {
            for p in floods where p.isRunning { p.terminate() }
            for p in floods { p.waitUntilExit() }
        }
        for _ in 0..<2 {
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
        let buffers = { (try? c.call("stats")["buffers"]) ?? .null }
        #expect(eventually { (buffers()["paused_connections"]?.intValue ?? 0) >= 1 }, "\(buffers())")

        // This user's request is held too; the 1 MB behind it are all read. (No `stats` now:
        // the pool has no thread left for it.)
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        let mine = Array((list + (1...1_000).map(ping).joined()).utf8)
        var sent = 0
        #expect(
            eventually {
                sent += raw.trySend(mine[sent...])
                return sent == mine.count
            }, "\(sent) of \(mine.count) bytes taken")

        try FileManager.default.removeItem(atPath: hold)
        for id in 0...1_000 {
            guard raw.readLine()?["id"] == .int(Int64(id)) else {
                Issue.record("no reply \(id)")
                break
            }
        }
    }
}
#endif
