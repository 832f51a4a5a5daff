// A policy run under load (writers wait for one batch at most: assetd(8), DATA MODEL,
// Lifecycle policies): 20 clients put objects with real files while policy.enforce runs again
// and again with a small budget and batch. No acknowledged put is lost unless a deletion event
// reported it, and the writers go on.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct PolicyLoadTests {
    @Test("20 writers during repeated enforcement go on and lose nothing that was not reported evicted")
    func writersDuringEnforcement() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 64 << 10, batch: 20), logLevel: "info")
        let deleted = Locked(Set<String>())
        let ready = DispatchSemaphore(value: 0)
        let watchSocket = h.socket
        let watching = onThread {
            guard let watcher = try? ControlClient(socketPath: watchSocket, timeout: 60),
                (try? watcher.call("watch", ["types": ["object.deleted"]])) != nil
            else { return }
            ready.signal()
            while let e = try? watcher.nextEvent() {
                let name = "\(e["collection"]?.stringValue ?? "")/\(e["key"]?.stringValue ?? "")"
                if name == "marker/end" { return }
                deleted.withLock { _ = $0.insert(name) }
            }
        }

        #expect(ready.wait(timeout: .now() + 60) == .success, "the watcher is watching")
        let acknowledged = Locked([String]())
        let latencies = Locked([Double]())
        let failures = Locked([String]())
        let stop = Locked(false)
        let (root, socket) = (h.root, h.socket)
        var writers = [DispatchSemaphore]()
        for w in 0..<20 {
            writers.append(
                onThread {
                    do {
                        let c = try ControlClient(socketPath: socket, timeout: 30)
                        var i = 0
                        while !stop.current {
                            let path = "\(root)/w\(w)/\(i).bin"
                            try? FileManager.default.createDirectory(
                                atPath: "\(root)/w\(w)", withIntermediateDirectories: true)
                            guard
                                FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 1024))
                            else { throw POSIXError(.EIO) }
                            let started = Date()
                            try c.putObject("load", "w\(w)-\(i)", ["file": .string(path)])
                            latencies.withLock { $0.append(Date().timeIntervalSince(started)) }
                            acknowledged.withLock { $0.append("load/w\(w)-\(i)") }
                            i += 1
                        }
                    } catch {
                        failures.withLock { $0.append("writer \(w): \(error)") }
                    }
                })
        }
        let enforcer = try h.client(timeout: 60)
        var runs = 0
        var evicted = 0
        // Until enough work overlapped (counts, not time: a loaded machine only takes longer).
        let deadline = Date().addingTimeInterval(120)
        while (runs < 20 || evicted == 0 || acknowledged.current.count <= 400) && Date() < deadline {
            let plan = try enforcer.call("policy.enforce")
            evicted += plan["objects"]?.arrayValue?.count ?? 0
            runs += 1
        }
        stop.withLock { $0 = true }
        for s in writers { _ = s.wait(timeout: .now() + 60) }
        try enforcer.putObject("marker", "end")
        try enforcer.deleteObject("marker", "end")
        #expect(watching.wait(timeout: .now() + 60) == .success, "the watcher saw the end marker")

        #expect(failures.current.isEmpty, "\(failures.current)")
        let sorted = latencies.current.sorted()
        let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        print(
            "policy under load: \(sorted.count) puts, \(runs) enforce runs evicted \(evicted) objects, put p99 \(Int(p99 * 1000)) ms"
        )
        // Latency is the benchmark's to measure (scripts/bench.sh); here only that it went on.
        #expect(sorted.count > 400, "the writers made progress: \(sorted.count) puts")
        #expect(evicted > 0, "the budget forced evictions")

        let reported = deleted.current
        let c = try h.client(timeout: 60)
        var lost = [String]()
        for name in acknowledged.current where !reported.contains(name) {
            let key = String(name.dropFirst("load/".count))
            if try c.getObject("load", key) == .null { lost.append(name) }
        }
        #expect(lost.isEmpty, "acknowledged, never reported deleted, and gone: \(lost.prefix(10))")
    }
}
