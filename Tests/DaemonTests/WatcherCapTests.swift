// control.max_watchers_per_uid (assetd.toml(5)): every watcher costs each commit a copy of
// its events on the loop, so a user who is not an admin holds at most that many watching
// connections; the next `watch` is refused with `busy`, and a watcher that goes frees its
// place. Admins are not held to it.

import AssetClient
import Foundation
import Testing

@Suite struct WatcherCapTests {
    /// Puts objects until `watcher` prints an event: its watch was taken by then.
    static func watching(_ watcher: BackgroundProcess, _ c: ControlClient) -> Bool {
        eventually { (try? c.putObject("cap", "probe")) != nil && !watcher.output.isEmpty }
    }

    @Test(
        "a user's watch past max_watchers_per_uid is refused with busy until one of its watchers goes",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func capped() throws {
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                max_watchers_per_uid = 2
                """)
        let c = try h.client()  // an admin's: the daemon's own uid
        let watchers = try (0..<2).map { _ in try ConnectionSlotTests.watcherAsNobody(h) }
        for w in watchers { #expect(Self.watching(w, c)) }

        let refused = try h.assetctlAsNobody("watch")
        #expect(refused.status != 0 && refused.stderr.contains("max_watchers_per_uid"), "\(refused)")
        #expect(h.log.contains("refusing a watch: uid \(Nobody.uid) holds 2 watching connections"))
        // Five watches pipelined on one connection: five refusals, one line in the log.
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"watch"}\\n' % i for i in range(5)))
            data = b""
            while data.count(b"\\n") < 5:
                data += s.recv(65536)
            print(data.decode().count("max_watchers_per_uid"))
            """
        let burst = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", script,
                h.socket,
            ])
        #expect(burst.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "5", "\(burst)")
        #expect(h.log.components(separatedBy: "refusing a watch: uid").count - 1 == 2, "\(h.log)")
        // Not the admins: three more of theirs watch.
        let admins = try (0..<3).map { _ in try h.client() }
        for a in admins { #expect(try a.call("watch") == ["watching": true]) }

        watchers[0].stop()
        #expect(eventually { (try? c.call("stats")["connections"]) == 5 })
        let another = try ConnectionSlotTests.watcherAsNobody(h)
        #expect(Self.watching(another, c))
        for a in admins { #expect(try a.nextEvent()?["key"] == "probe") }
        another.stop()
        watchers[1].stop()
    }
}
