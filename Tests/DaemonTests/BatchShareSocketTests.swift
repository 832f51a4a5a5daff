// Over the socket: one uid's many puts that each read many held files again (objects holding
// files through manual edges) share one batch's allowance: past it they go in the next batches,
// and another uid's put sent while they wait commits in the first (an earlier commit than the
// last of them), with or without a failing put making the batch retry; and so do puts of over
// 256 KiB each (a put's named files cost follows its bytes). Debug builds hold the
// committer (ASSETD_DEBUG_HOLD_COMMIT) until every put is queued (`stats.debug.puts_waiting`).

@testable import AssetDaemon
import AssetClient
import ControlProtocol
import Foundation
import JSON
import Testing

@Suite(.serialized) struct BatchShareSocketTests {
    /// Sends each of argv[2…] on a connection of its own to argv[1] (`fat:K`: a put of c/K whose
    /// value holds a string of 300,000 bytes, too long for an argument), prints "sent", then
    /// each reply in that order and "done".
    static let script = """
        import json, socket, sys
        conns = []
        for line in sys.argv[2:]:
            if line.startswith("fat:"):
                params = {"collection": "c", "key": line[4:], "value": {"pad": "x" * 300000}}
                line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "object.put", "params": params})
            s = socket.socket(socket.AF_UNIX); s.settimeout(120); s.connect(sys.argv[1])
            s.sendall(line.encode() + b"\\n"); conns.append(s)
        print("sent", flush=True)
        for s in conns: print(s.makefile("rb").readline().decode().strip(), flush=True)
        print("done", flush=True)
        """

    private static func line(_ method: String, _ params: JSONValue) -> String {
        let request: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        return request.serialized()
    }

    private static func commit(_ reply: String) -> Int64? {
        (try? JSONValue.parse(reply))?["result"]?["commit"]?.intValue
    }

    /// Nobody's puts of `objects` objects each holding 10 of its files (30 calls each for the
    /// walk, past the share of 27 at max_cascade_objects = 10, within the allowance of 110),
    /// plus `failing` (a put of a path outside the roots), sent while the committer is held;
    /// then root's put of a new object. Nobody's replies, and root's.
    private func heavyPuts(objects: Int, failing: Bool, fat: Int = 0) throws -> (nobody: [String], root: JSONValue?) {
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\nenforce_ownership = true\nmax_cascade_objects = 10", start: false)
        let hold = h.dir + "/hold"
        h.environment = ["ASSETD_DEBUG_HOLD_COMMIT": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        defer { _ = h.stop() }
        let admin = try h.client()
        var ops = [JSONValue]()
        var files = [String]()
        for i in 0..<10 {
            let f = try h.makeFile("nobody/f\(i).bin")
            #expect(chown(f, Nobody.uid, Nobody.uid) == 0)
            files.append(f)
        }
        #expect(chown(h.root + "/nobody", Nobody.uid, Nobody.uid) == 0)
        for o in 0..<objects {
            let ref: JSONValue = ["collection": "c", "key": .string("o\(o)")]
            ops.append([
                "method": "object.put",
                "params": ["collection": "c", "key": ref["key"]!, "value": [:], "owner": "nobody"],
            ])
            for f in files {
                ops.append([
                    "method": "edge.add",
                    "params": ["name": "f", "source": ref, "destination": ["file": .string(f)], "rules": []],
                ])
            }
        }
        if !ops.isEmpty { _ = try admin.call("transact", ["ops": .array(ops)]) }
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        var lines = (0..<objects).map {
            Self.line("object.put", ["collection": "c", "key": .string("o\($0)"), "value": [:]])
        }
        // Fat puts: new objects (nothing read again), each line over the 256 KiB share.
        lines += (0..<fat).map { "fat:fat\($0)" }
        if failing {
            lines.append(Self.line("object.put", ["collection": "c", "key": "bad", "value": ["file": "/etc/passwd"]]))
        }
        let p = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.script, h.socket,
            ]
                + lines)
        defer { _ = p.stop() }
        #expect(p.waitForLine { $0 == "sent" }, "\(p.output)")
        func waiting() -> Int64? { try? admin.call("stats")["debug"]?["puts_waiting"]?.intValue }
        #expect(eventually { waiting() == Int64(lines.count) }, "\(String(describing: waiting()))")
        let root = try RawConnection(path: h.socket)
        root.send(Self.line("object.put", ["collection": "c", "key": "light", "value": [:]]) + "\n")
        #expect(eventually { waiting() == Int64(lines.count + 1) })
        try FileManager.default.removeItem(atPath: hold)
        let rootReply = root.readLine()
        #expect(p.waitForLine { $0 == "done" }, "\(p.output)")
        return (Array(p.output.dropFirst().prefix(lines.count)), rootReply)
    }

    @Test(
        "another uid's put commits before one uid's heavy puts sent earlier are all done",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func heavyUidShares() throws {
        let (nobody, root) = try heavyPuts(objects: 6, failing: false)
        let commits = nobody.compactMap(Self.commit)
        #expect(commits.count == 6, "\(nobody)")
        let light = try #require(root?["result"]?["commit"]?.intValue, "\(String(describing: root))")
        // Without shares all seven went in one commit.
        #expect(light < commits.max() ?? 0, "root's \(light), nobody's \(commits)")
        #expect(Set(commits).count > 1)
    }

    @Test(
        "the same with a failing put in the batch: its retry does not take the heavy uid's puts past its share",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func heavyUidSharesInRetry() throws {
        let (nobody, root) = try heavyPuts(objects: 6, failing: true)
        let commits = nobody.prefix(6).compactMap(Self.commit)
        #expect(commits.count == 6, "\(nobody)")
        #expect(nobody.last?.contains("path_outside_roots") == true, "\(nobody)")
        let light = try #require(root?["result"]?["commit"]?.intValue, "\(String(describing: root))")
        #expect(light < commits.max() ?? 0, "root's \(light), nobody's \(commits)")
    }

    @Test(
        "another uid's put commits before one uid's fat puts sent earlier are all done",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func fatPutsShare() throws {
        let (nobody, root) = try heavyPuts(objects: 0, failing: false, fat: 4)
        let commits = nobody.compactMap(Self.commit)
        #expect(commits.count == 4, "\(nobody)")
        let light = try #require(root?["result"]?["commit"]?.intValue, "\(String(describing: root))")
        #expect(light < commits.max() ?? 0, "root's \(light), nobody's \(commits)")
        #expect(Set(commits).count == 4)
    }
}
