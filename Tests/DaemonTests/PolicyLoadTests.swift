// A policy run under load (SPEC §9 "clients are never stalled"): 20 clients put objects with
// real files while policy.enforce runs again and again with a small budget and batch. No
// acknowledged put is lost unless a deletion event reported it, and put latency stays low.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct PolicyLoadTests {
    @Test("20 writers during repeated enforcement keep a low p99 and lose nothing that was not reported evicted")
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

        #expect(ready.wait(timeout: .now() + 10) == .success, "the watcher is watching")
        let acknowledged = Locked([String]())
        let latencies = Locked([Double]())
        let failures = Locked([String]())
        let stop = Locked(false)
        let (root, socket) = (h.root, h.socket)
        var writers = [DispatchSemaphore]()
        for w in 0..<20 {
            writers.append(onThread {
                do {
                    let c = try ControlClient(socketPath: socket, timeout: 30)
                    var i = 0
                    while !stop.current {
                        let path = "\(root)/w\(w)/\(i).bin"
                        try? FileManager.default.createDirectory(atPath: "\(root)/w\(w)", withIntermediateDirectories: true)
                        FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 1024))
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
        let deadline = Date().addingTimeInterval(4)
        while Date() < deadline {
            let plan = try enforcer.call("policy.enforce")
            evicted += plan["objects"]?.arrayValue?.count ?? 0
            runs += 1
        }
        stop.withLock { $0 = true }
        for s in writers { _ = s.wait(timeout: .now() + 30) }
        try enforcer.putObject("marker", "end")
        try enforcer.deleteObject("marker", "end")
        #expect(watching.wait(timeout: .now() + 30) == .success, "the watcher saw the end marker")

        #expect(failures.current.isEmpty, "\(failures.current)")
        let sorted = latencies.current.sorted()
        let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        print("policy under load: \(sorted.count) puts, \(runs) enforce runs evicted \(evicted) objects, put p99 \(Int(p99 * 1000)) ms")
        #expect(sorted.count > 200, "the writers made progress: \(sorted.count) puts")
        #expect(evicted > 0, "the budget forced evictions")
        #expect(p99 < 2, "p99 \(p99) s: a policy run stalled the writers")

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
