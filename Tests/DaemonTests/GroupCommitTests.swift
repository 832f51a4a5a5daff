// Group commit of object.put: concurrent clients' puts share commits, each is acknowledged
// only once durable, and one client's bad put fails alone.

import AssetClient
import AssetDaemon
import ControlProtocol
import AssetStore
import Foundation
import Testing

@Suite struct GroupCommitTests {
    @Test("concurrent puts from 20 clients are all stored, several per commit, each failing alone")
    func concurrentPutsShareCommits() throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("shared.bin", size: 100)
        let commits = Box<[Int64]>()
        commits.value = []
        let lock = NSLock()
        let failures = Box<Int>()
        failures.value = 0
        let socket = h.socket
        let group = DispatchGroup()
        // Real threads: concurrentPerform would run only as many clients at once as there are cores.
        let threads = (0..<20).map { client in
            Thread {
                defer { group.leave() }
                guard let c = try? ControlClient(socketPath: socket, timeout: 30) else { return }
                for i in 0..<25 {
                    let bad = i == 12
                    let value: JSONValue = bad ? ["file": "/etc/passwd"] : ["file": .string(file), "n": .int(Int64(i))]
                    do {
                        let r = try c.call("object.put", ["collection": "g", "key": .string("c\(client)-\(i)"), "value": value])
                        lock.withLock { commits.value!.append(r["commit"]?.intValue ?? -1) }
                    } catch {
                        if case ClientError.rpc(let e) = error, e.stableCode == "path_outside_roots", bad {
                            lock.withLock { failures.value! += 1 }
                        }
                    }
                }
                c.close()
            }
        }
        for t in threads {
            group.enter()
            t.start()
        }
        group.wait()
        #expect(failures.value == 20)
        #expect(commits.value?.count == 480)
        #expect(Set(commits.value ?? []).count < 480, "no put shared a commit")
        let c = try h.client()
        for client in 0..<20 {
            for i in 0..<25 {
                let obj = try c.call("object.get", ["collection": "g", "key": .string("c\(client)-\(i)")])
                #expect(obj.isNull == (i == 12), "c\(client)-\(i)")
            }
        }
        let stats = try c.call("stats")
        #expect(stats["objects"] == 480)
        #expect(stats["files"] == 1)
    }
}

@Suite struct PutBatchFailureTests {
    /// A store in a fresh temp folder, with one root.
    private func openStore() throws -> Store {
        var template = Array("/tmp/assetd-batch-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(.EIO) }
        let dir = String(cString: template)
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        return try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
    }

    @Test("a batch whose write is refused before it starts still answers every put, with the refusal")
    func refusedBeforeTaking() throws {
        let store = try openStore()
        store.close()
        let ctx = MethodContext(store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
        for n in [1, 2] {
            let inputs: [(JSONValue, MethodContext)] = (0..<n).map { i in
                (["collection": "c", "key": .string("k\(i)"), "value": ["i": .int(Int64(i))]], ctx)
            }
            let results = MethodTable.putBatch(store, inputs)
            #expect(results.count == n, "a put without a reply waits forever, and its batcher resubmits it")
            for r in results {
                guard case .failure(let e) = r else {
                    Issue.record("a put on a closed store succeeded")
                    continue
                }
                #expect(e.message.contains("closed"))
            }
        }
    }
}
