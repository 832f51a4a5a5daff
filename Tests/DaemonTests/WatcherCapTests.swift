// control.max_watchers_per_uid (assetd.toml(5)): every watcher costs each commit a copy of
// its events on the loop, so a user who is not an admin holds at most that many watching
// connections; the next `watch` is refused with `busy`, and a watcher that goes frees its
// place. Admins are not held to it.

import AssetClient
import AssetStore
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
            print(sum("max_watchers_per_uid" in line for line in data.decode().splitlines()))
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

    /// Runs `steps` as root, each `[connection, gid, method, params?]`: a connection is opened
    /// at its first step as uid nobody with that gid (the daemon reads the effective ids at
    /// connect). One line an answer: its result, or its error's data, keys sorted.
    static func steps(_ h: DaemonHarness, _ steps: [JSONValue]) throws -> [String] {
        let script = """
            import json, os, socket, sys
            conns = {}
            for name, gid, method, *params in json.loads(sys.argv[2]):
                if name not in conns:
                    os.setegid(gid); os.seteuid(\(Nobody.uid))
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                    os.seteuid(0); os.setegid(0)
                    conns[name] = s.makefile("rwb")
                f = conns[name]
                req = {"jsonrpc": "2.0", "id": 1, "method": method}
                if params: req["params"] = params[0]
                f.write(json.dumps(req).encode() + b"\\n"); f.flush()
                while True:
                    m = json.loads(f.readline())
                    if "id" in m: break
                print(json.dumps(m.get("result", m.get("error", {}).get("data")), sort_keys=True, separators=(",", ":")))
            """
        let r = try runProcess("/usr/bin/python3", ["-c", script, h.socket, JSONValue.array(steps).serialized()])
        #expect(r.status == 0, "\(r)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    static let watching = #"{"watching":true}"#
    static let busy = #"{"code":"busy","detail":{"limit":"control.max_watchers_per_uid","value":1}}"#

    @Test(
        "unwatch frees a place, a new filter is not counted again, and busy names the limit in data.detail",
        .enabled(if: Nobody.canSwitch, "needs root to act as another user"))
    func unwatchFreesAPlace() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nmax_watchers_per_uid = 1")
        let u = JSONValue.int(Int64(Nobody.uid))
        let answers = try Self.steps(
            h,
            [
                ["a", u, "watch"], ["a", u, "watch", ["types": ["object.put"]]], ["b", u, "watch"],
                ["a", u, "unwatch"], ["b", u, "watch"], ["a", u, "watch"],
            ])
        #expect(answers == [Self.watching, Self.watching, Self.busy, #"{"watching":false}"#, Self.watching, Self.busy])
    }

    @Test(
        "a uid's connections that are an admin's by their gid do not count against its cap",
        .enabled(if: Nobody.canSwitch, "needs root to act as another user"))
    func adminConnectionsAreNotCounted() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nmax_watchers_per_uid = 1\nadmin_groups = [4242]")
        let u = JSONValue.int(Int64(Nobody.uid))
        let answers = try Self.steps(
            h, [["admin1", 4242, "watch"], ["admin2", 4242, "watch"], ["a", u, "watch"], ["b", u, "watch"]])
        #expect(answers == [Self.watching, Self.watching, Self.watching, Self.busy])
    }
}
