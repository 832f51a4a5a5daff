// The daemon's life (assetd(8), START-UP AND SHUTDOWN): graceful stops with requests in flight, a
// crash in the middle of deletes of shared files (after the restart no held file is gone, objects
// are whole or gone, and a sweep leaves nothing behind), stale and live sockets, and a database
// another daemon holds.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite("lifecycle") struct LifecycleTests {
    @Test("SIGTERM with writes in flight: assetd exits 0 and every acknowledged write is there after a restart")
    func sigtermInFlight() throws {
        let h = try DaemonHarness()
        let acknowledged = Locked<[String]>([])
        let endings = Locked<[String]>([])
        let socket = h.socket
        let writers = (0..<3).map { w in
            onThread {
                guard let c = try? ControlClient(socketPath: socket, timeout: 60) else { return }
                for i in 0... {
                    let key = "w\(w)-\(i)"
                    do {
                        try c.putObject("inflight", key, ["i": .int(Int64(i))])
                    } catch {
                        endings.withLock { $0.append(Self.describeEnding(error)) }
                        return
                    }
                    acknowledged.withLock { $0.append(key) }
                }
            }
        }
        #expect(eventually { acknowledged.current.count >= 60 })
        #expect(h.stop(signal: SIGTERM) == 0)
        for w in writers { #expect(w.wait(timeout: .now() + 60) == .success, "a writer was left hanging") }
        for ending in endings.current {
            #expect(ending == "closed" || ending == "shutting_down", "a write in flight ended with \(ending)")
        }

        try h.start()
        let c = try h.client()
        let stored = Set(
            try c.call("object.list", ["collection": "inflight", "limit": 100_000])["keys"]?.strings ?? [])
        let lost = acknowledged.current.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(10))")
    }

    private static func describeEnding(_ error: any Error) -> String {
        switch error as? ClientError {
        case .closed?: return "closed"
        case .rpc(let e)? where e.stableCode == "shutting_down": return "shutting_down"
        default: return "\(error)"
        }
    }

    @Test("a second SIGTERM while assetd checkpoints before exit does not kill it: it still exits 0")
    func secondSigtermDuringExit() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        _ = try c.call("object.put", ["collection": "s", "key": "a", "value": ["n": 1]])
        c.close()
        // A reader on a snapshot that uses the WAL: the checkpoint before exit (TRUNCATE)
        // waits for it, which holds assetd in the window.
        var config = StoreConfiguration(roots: [h.root])
        config.readOnly = true
        let reader = try Store(path: h.database, configuration: config)
        defer { reader.close() }
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = onThread {
            _ = try? reader.read { r in
                _ = try r.objectCount()
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let pid = h.process!.processIdentifier
        kill(pid, SIGTERM)
        #expect(eventually(timeout: 60) { h.log.contains("checkpointing the database before exit") })
        kill(pid, SIGTERM)
        // Delivered (to the daemon's handler, or fatally by default) before the reader lets go.
        #expect(signalsDelivered(to: pid))
        release.signal()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(h.stop(signal: 0) == 0, "the second SIGTERM killed assetd")
    }

    @Test("SIGINT stops assetd like SIGTERM: exit 0, socket removed, data kept")
    func sigint() throws {
        let h = try DaemonHarness()
        try h.client().putObject("k", "v")
        #expect(h.stop(signal: SIGINT) == 0)
        #expect(!h.exists(h.socket))
        try h.start()
        #expect(try h.client().getObject("k", "v") != .null)
    }

    @Test("SIGTERM while a client does not read its replies: assetd still exits 0 soon")
    func shutdownWithNonReader() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("big", "k", ["blob": .string(String(repeating: "b", count: 64 * 1024))])
        let hog = try RawConnection(path: h.socket)
        hog.sendGetsWithoutReading("big", "k")
        c.close()
        let status = h.stop(timeout: 60)
        #expect(status == 0, "on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 60 s)")
        withExtendedLifetime(hog) {}
    }

    @Test("SIGTERM while a watcher does not read its events: assetd still exits 0 soon")
    func shutdownWithNonReadingWatcher() throws {
        let h = try DaemonHarness()
        let watcher = try RawConnection(path: h.socket)
        watcher.send(#"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n")
        #expect(watcher.readLine()?["id"] == 1)
        let c = try h.client()
        // Events with long keys, until well past any socket buffer (but under the 16 MiB drop limit).
        let longKey = String(repeating: "k", count: 1000)
        for i in 0..<40 {
            let ops: [JSONValue] = (0..<200).map { j in
                [
                    "method": "object.put",
                    "params": ["collection": "w", "key": .string("\(longKey)\(i)-\(j)"), "value": [:]],
                ]
            }
            try c.call("transact", ["ops": .array(ops)])
        }
        c.close()
        let status = h.stop(timeout: 60)
        #expect(status == 0, "on SIGTERM … exits 0; got \(String(describing: status)) (nil: still running after 60 s)")
        withExtendedLifetime(watcher) {}
    }

    @Test(
        "SIGKILL during deletes of shared files: after a restart no held file is gone (I1), objects are whole or gone (I4), and a sweep leaves nothing behind (I2)"
    )
    func killDuringDeletes() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        // 30 files; each held by four objects of its own and by two "pair" objects holding two files.
        var holdings: [String: [String]] = [:]
        var files: [String] = []
        for i in 0..<30 { files.append(try h.makeFile("shared/f\(i).bin", size: 100 + i)) }
        for i in 0..<30 {
            for s in ["a", "b", "c", "d"] { holdings["f\(i)\(s)"] = [files[i]] }
            holdings["pair\(i)"] = [files[i], files[(i + 1) % 30]]
        }
        var ops: [JSONValue] = []
        for (key, held) in holdings.sorted(by: { $0.key < $1.key }) {
            let file: JSONValue = held.count == 1 ? .string(held[0]) : .array(held.map(JSONValue.string))
            ops.append([
                "method": "object.put",
                "params": ["collection": "crash", "key": .string(key), "value": ["file": file]],
            ])
        }
        try c.call("transact", ["ops": .array(ops)])
        c.close()

        let order = holdings.keys.shuffled()
        let deleted = Locked<[String]>([])
        let socket = h.socket
        let deleter = onThread {
            guard let d = try? ControlClient(socketPath: socket, timeout: 60) else { return }
            for key in order {
                do { try d.deleteObject("crash", key) } catch { return }
                deleted.withLock { $0.append(key) }
            }
        }
        #expect(eventually { deleted.current.count >= 40 })
        h.stop(signal: SIGKILL)
        #expect(deleter.wait(timeout: .now() + 60) == .success)
        let acknowledged = Set(deleted.current)
        #expect(
            acknowledged.count < holdings.count, "the kill came before the last delete (\(acknowledged.count) done)")

        try h.start()
        let r = try h.client()
        var present = Set<String>()
        for (key, held) in holdings {
            let object = try r.getObject("crash", key)
            let edges = try r.call("edge.count", ["source": ref("crash", key)])["count"]?.intValue
            if object == .null {
                #expect(edges == 0, "I4: \(key) is gone but \(edges ?? -1) of its edges stayed")
            } else {
                present.insert(key)
                #expect(!acknowledged.contains(key), "\(key) was deleted (acknowledged) but is back")
                let paths = Set(object["files"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? [])
                #expect(paths == Set(held), "I4: \(key) holds \(paths), not \(held)")
                #expect(edges == Int64(held.count), "I4: \(key) has \(edges ?? -1) edges")
            }
        }
        let held = Set(present.flatMap { holdings[$0]! })
        for f in held { #expect(h.exists(f), "I1: \(f) is held by a surviving object but was unlinked") }

        try r.call("sweep")
        let orphaned = Set(files).subtracting(held)
        #expect(
            eventually { orphaned.allSatisfy { !h.exists($0) } },
            "I2: still there: \(orphaned.filter { h.exists($0) }.sorted())")
        #expect(try r.call("pending", [:]) == ["pending": []])
        #expect(try r.call("stats")["pending_unlinks"] == 0)
        for f in held { #expect(h.exists(f), "I1 after the sweep: \(f)") }

        for key in present { try r.deleteObject("crash", key) }
        #expect(eventually { files.allSatisfy { !h.exists($0) } }, "every file goes with its last holder")
    }

    @Test("assetd started with SIGTERM blocked by its parent (as a thread-pool parent does) still stops on SIGTERM")
    func inheritedSignalMask() throws {
        let h = try DaemonHarness(start: false)
        // This test's thread is a pool thread: libdispatch blocks nearly every signal there.
        try h.start(inheritSignalMask: true)
        let pid = try #require(h.process?.processIdentifier)
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let blocked =
            status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }.map(String.init) ?? "SigBlk: unknown"
        #expect(h.stop(signal: SIGTERM, timeout: 60) == 0, "SIGTERM ignored; the daemon runs with \(blocked)")
    }

    @Test("a stale socket file from a dead daemon is replaced")
    func staleSocket() throws {
        let h = try DaemonHarness(start: false)
        try makeStaleSocket(at: h.socket)
        #expect(permissions(of: h.socket) != nil)
        #expect(throws: ClientError.self) { try h.client(timeout: 1) }
        try h.start()
        #expect(try h.client().call("ping")["version"] != nil)
    }

    @Test("a second assetd on a live daemon's socket exits 1 saying so, and the first still answers")
    func secondDaemonSameSocket() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("first", "k")
        let second = h.dir + "/second.toml"
        try h.configText(database: h.dir + "/state2/assetd.sqlite").write(
            toFile: second, atomically: true, encoding: .utf8)
        let r = try runAssetd(["--config", second])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(h.socket), "the message names the socket: \(r.stderr)")
        #expect(try c.call("ping")["version"] != nil, "the first daemon's connection is untouched")
        #expect(try h.client().getObject("first", "k") != .null, "and it still accepts connections")
        #expect(h.isRunning)
    }

    @Test("a second assetd on a database another daemon holds exits 1 naming the database, and the first still answers")
    func secondDaemonSameDatabase() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let second = h.dir + "/second.toml"
        let otherSocket = h.dir + "/run/second.sock"
        try h.configText(socket: otherSocket).write(toFile: second, atomically: true, encoding: .utf8)
        let r = try runAssetd(["--config", second])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(h.database), "the message names the database: \(r.stderr)")
        #expect(!h.exists(otherSocket), "the second daemon left no socket")
        try c.putObject("still", "writable")
        #expect(try h.client().getObject("still", "writable") != .null)
    }

    @Test("a second assetd on a held database says so once, with the path and the holder's pid")
    func secondDaemonMessage() throws {
        let h = try DaemonHarness()
        let second = h.dir + "/second.toml"
        try h.configText(socket: h.dir + "/run/second.sock").write(toFile: second, atomically: true, encoding: .utf8)
        let r = try runAssetd(["--config", second])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("\(h.database): the database is held by another process (pid "), "\(r.stderr)")
        #expect(!r.stderr.contains("held by another process: the database"), "said twice: \(r.stderr)")
    }

    @Test("a restart keeps objects, edges and files, and drains what was queued")
    func restartKeepsState() throws {
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1s""#)
        let c = try h.client()
        let kept = try h.makeFile("kept"), dropped = try h.makeFile("dropped")
        try c.putObject("r", "keep", ["file": .string(kept)])
        try c.putObject("r", "drop", ["file": .string(dropped)])
        try c.addEdge("link", from: ref("r", "keep"), to: ref("r", "drop"), rules: [])
        try c.call("edge.remove", ["name": "link", "source": ref("r", "keep"), "destination": ref("r", "drop")])
        try c.deleteObject("r", "drop")
        #expect(h.stop() == 0)
        #expect(h.exists(dropped), "the delay had not passed at the stop")
        try h.start()
        let r = try h.client()
        #expect(try r.getObject("r", "keep")["files"]?.arrayValue?.count == 1)
        #expect(eventually { !h.exists(dropped) }, "the queue is drained after the restart")
        #expect(h.exists(kept))
    }
}
