// A user connecting in a loop past control.max_connections_per_uid (assetd.toml(5)) costs
// the loop no lookup in the user and group databases per connection (one a minute per ids
// when admin_groups could make it an admin), and the log one line a minute, with a count.
// Debug builds count the lookups in `stats.debug.identity_lookups` (ASSETD_DEBUG_STATS).

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct RefusalLogTests {
    @Test(
        "300 connections refused past a user's cap: one log line and no lookup per connection",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"),
        arguments: [false, true])
    func refusalsAreCheap(adminGroups: Bool) throws {
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                max_connections_per_uid = 2
                \(adminGroups ? "admin_groups = [4242]" : "")
                """, start: false)
        h.environment = ["ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let admin = try h.client()
        let holders = try (0..<2).map { _ in try ConnectionSlotTests.watcherAsNobody(h) }
        defer { for w in holders { w.stop() } }
        #expect(eventually { (try? admin.call("stats")["connections"]) == 3 })
        let lookups = { () throws -> Int64? in try admin.call("stats")["debug"]?["identity_lookups"]?.intValue }
        let before = try #require(try lookups())

        let script = """
            import socket, sys
            refused = 0
            for i in range(int(sys.argv[2])):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                refused += b"max_connections_per_uid" in data
                s.close()
            print(refused)
            """
        let flood = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", script,
                h.socket, "300",
            ], timeout: 300)
        #expect(flood.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "300", "\(flood)")
        // With admin_groups, nobody's groups are read once, at its first refusal.
        #expect(try lookups() == before + (adminGroups ? 1 : 0))
        let lines = h.log.components(separatedBy: "refusing a connection: uid \(Nobody.uid) holds 2").count - 1
        #expect(lines == 1, "\(h.log)")
    }
}
#endif
