// A reload (SIGHUP) reaches connections already open: each session keeps what its methods run
// with (caller, enforce_ownership) between requests, and a reload must make it again
// (assetd(8), SIGNALS; assetd.toml(5), [control]). The client is `nobody`, so these need root.

import Foundation
import Testing

@Suite("reload on an open connection") struct ReloadConnectionTests {
    /// One connection as `nobody` that sends `line` once, then again for each line written
    /// to `fifo`, printing each reply line.
    static let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        replies = s.makefile("rb")
        def call():
            s.sendall(sys.argv[3].encode() + b"\\n")
            sys.stdout.write(replies.readline().decode())
            sys.stdout.flush()
        call()
        for _ in open(sys.argv[2]):
            call()
        """

    @Test(
        "SIGHUP changes enforce_ownership and admin_uids for a connection opened before it",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func reloadReachesOpenConnection() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        try h.client().putObject("h", "roots", ["v": 1])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chmod(dir, 0o777)
        let fifo = dir + "/next"
        try #require(mkfifo(fifo, 0o666) == 0 && chmod(fifo, 0o666) == 0)

        let touch = #"{"jsonrpc":"2.0","id":1,"method":"object.touch","params":{"collection":"h","key":"roots"}}"#
        let client = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.script, h.socket, fifo, touch,
            ])
        defer { client.stop(signal: SIGKILL) }
        func reply(_ n: Int) -> String? {
            guard client.waitForLine(timeout: 60, where: { _ in client.output.count >= n }) else { return nil }
            return client.output[n - 1]
        }
        #expect(reply(1)?.contains(#""result""#) == true, "not enforced yet: \(client.output)")

        // Blocks until the client opens its end, which it does after its first reply.
        let next = try #require(FileHandle(forWritingAtPath: fifo))
        h.controlSection = "mode = \"0666\"\nenforce_ownership = true"
        try h.reload()
        next.write(Data("next\n".utf8))
        #expect(reply(2)?.contains("permission_denied") == true, "enforced after the reload: \(client.output)")

        h.controlSection = "mode = \"0666\"\nenforce_ownership = true\nadmin_uids = [\(Nobody.uid)]"
        try h.reload()
        next.write(Data("next\n".utf8))
        #expect(reply(3)?.contains(#""result""#) == true, "an admin after the second reload: \(client.output)")
        try next.close()
    }
}
