// Which watchers the 16 MiB rule drops (assetd(8), LIMITS): over the total, those holding the
// oldest events go first, so one user's watchers pinning earlier commits cannot take another
// user's readers of the last ones with them; and a filtered watcher is counted only for the
// broadcasts its filter takes some of, not for the events of collections it does not watch.

import AssetClient
import AssetStore
import Foundation
import Testing

#if DEBUG
@Suite struct WatcherDropOrderTests {
    /// A collection of the longest name, told apart by its first letters.
    static func collection(_ name: String) -> String { name + String(repeating: "c", count: 1024 - name.count) }

    /// `count` puts of events of about 2 KB each (the longest collection and key), about 4.3 KB
    /// weighed, into `collection(name)`, keys from `from` on.
    static func puts(_ name: String, from: Int, count: Int) -> JSONValue {
        let key = String(repeating: "k", count: 1000)
        let ops: [JSONValue] = (from..<from + count).map { i in
            [
                "method": "object.put",
                "params": ["collection": .string(collection(name)), "key": .string(key + String(i)), "value": 1],
            ]
        }
        return ["ops": .array(ops)]
    }

    /// Reads `count` events from `watcher`, each an `object.put` of the key numbered from `from` on.
    static func take(_ watcher: ControlClient, from: Int, count: Int) throws -> Bool {
        let key = String(repeating: "k", count: 1000)
        for i in from..<from + count {
            guard let e = try watcher.nextEvent(), e["key"]?.stringValue == key + String(i) else { return false }
        }
        return true
    }

    @Test(
        "over the total, the watchers pinning the oldest events are dropped, not another user's readers",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func pinningWatchersGoFirst() throws {
        // Nobody is an admin here, so only the total drops its watchers (not the 16 MiB a
        // user's watcher may have waiting whatever it reads).
        let h = try DaemonHarness(
            controlSection: """
                mode = "0666"
                admin_uids = [\(Nobody.uid)]
                max_request_bytes = "16MiB"
                connection_input_bytes = "32MiB"
                total_buffer_bytes = "36MiB"
                """,
            start: false)
        // Never stepped: no watcher is ever behind.
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": h.dir + "/step-epoch"]
        try h.start()
        let c = try h.client(timeout: 60)
        let script = """
            import signal, socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"watch"}\\n')
            data = b""
            while b"\\n" not in data:
                data += s.recv(4096)
            print("watching", flush=True)
            signal.pause()
            """
        // Three of nobody's watchers that take nothing after their watch's reply.
        var pinning: [BackgroundProcess] = []
        for _ in 0..<3 {
            let p = try BackgroundProcess(
                "/usr/bin/setpriv",
                [
                    "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                    script, h.socket,
                ])
            #expect(p.waitForLine { $0 == "watching" })
            pinning.append(p)
        }
        let readers = try (0..<3).map { _ in try h.client(timeout: 60) }
        for r in readers { try r.call("watch") }
        // Two transacts of 2,000 (8.7 MB weighed each) the readers take whole and nobody's
        // watchers pin; one more the readers are given a slice of, then one of 4,200
        // (18.2 MB), which leaves more than 16 MiB waiting behind that for every watcher: 44
        // MB in all, over the 37.7 MB total, 27 MB without what only nobody's watchers hold.
        try c.call("transact", Self.puts("fan", from: 0, count: 2000))
        try c.call("transact", Self.puts("fan", from: 2000, count: 2000))
        for r in readers { #expect(try Self.take(r, from: 0, count: 4000)) }
        try c.call("transact", Self.puts("fan", from: 4000, count: 2000))
        try c.call("transact", Self.puts("fan", from: 6000, count: 4200))
        // Dropped as the events were queued, before the transact was answered.
        #expect(try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 3)
        #expect(h.log.components(separatedBy: "dropping a watcher (uid \(Nobody.uid))").count == 4)
        #expect(!h.log.contains("dropping a watcher (uid \(getuid()))"))
        for r in readers { #expect(try Self.take(r, from: 4000, count: 6200), "a reader got every event, in order") }
        #expect(try c.call("stats")["connections"] == 4)
        for p in pinning { _ = p.stop() }
    }

    @Test("a watcher of a quiet collection that does not read is not dropped for others' events")
    func quietWatcherIsNotCountedForOthers() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = \"8MiB\"", start: false)
        let step = h.dir + "/step-epoch"
        h.environment = ["ASSETD_DEBUG_STEP_EPOCH": step]  // the epoch stays put till stepped
        try h.start()
        let c = try h.client(timeout: 60)
        let quiet = try h.client(timeout: 60)
        try quiet.call("watch", ["collections": [.string(Self.collection("quiet"))]])
        // Its own collection's events, more than a slice and the socket take: it is given a
        // slice of them and takes none, behind once the epoch has been stepped twice.
        try c.call("transact", Self.puts("quiet", from: 0, count: 2000))
        for _ in 0..<2 {
            #expect(FileManager.default.createFile(atPath: step, contents: nil))
            #expect(eventually { !h.exists(step) }, "the epoch advanced")
        }
        // 26 MB of other collections' events: counted for it, they dropped it at the second.
        for n in 0..<3 { try c.call("transact", Self.puts("loud", from: n * 2000, count: 2000)) }
        #expect(try ConnectionMemoryTests.buffers(c)["dropped_connections"] == 0)
        #expect(!h.log.contains("dropping a watcher"))
        #expect(try Self.take(quiet, from: 0, count: 2000))
        try c.call("object.put", ["collection": .string(Self.collection("quiet")), "key": "after", "value": 1])
        #expect(try quiet.nextEvent()?["key"] == "after", "still watching, and given none of the others'")
    }
}
#endif
