// Group commit of object.put: concurrent clients' puts share commits, each is acknowledged
// only once durable, and one client's bad put fails alone.

import AssetClient
@testable import AssetDaemon
import ControlProtocol
import AssetStore
import AssetStoreTestSupport
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
                        let r = try c.call(
                            "object.put", ["collection": "g", "key": .string("c\(client)-\(i)"), "value": value])
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
    private let folders = TempFolders(prefix: "assetd-batch-")

    /// A store in a fresh temp folder, with one root; the folder goes with the test.
    private func openStore() throws -> Store {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        return try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
    }

    @Test("a batch whose write is refused before it starts still answers every put, with the refusal")
    func refusedBeforeTaking() throws {
        let store = try openStore()
        store.close()
        let ctx = MethodContext(
            store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
        for n in [1, 2] {
            let inputs: [(JSONValue, MethodContext)] = (0..<n).map { i in
                (["collection": "c", "key": .string("k\(i)"), "value": ["i": .int(Int64(i))]], ctx)
            }
            let results = PutBatch.run(store, inputs).results.map(\.1)
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

    @Test("without syncing, a batch's commit is left for syncCommitted, which makes it durable")
    func unsyncedBatch() throws {
        let store = try openStore()
        defer { store.close() }
        let ctx = MethodContext(
            store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
        var once = false
        let batch = PutBatch.run(store, syncing: false) { () -> [(Int, Params, MethodContext)] in
            defer { once = true }
            return once ? [] : [(0, Params(["collection": "c", "key": "k", "value": ["n": 1]]), ctx)]
        }
        let commit = try #require(batch.unsynced)
        #expect(try batch.results.first?.1.get().result["commit"]?.intValue == commit)
        #expect(store.durableCommit < commit)
        try store.syncCommitted(commit)
        #expect(store.durableCommit == commit)
        // A synced batch leaves nothing to sync.
        once = false
        #expect(
            PutBatch.run(store) { () -> [(Int, Params, MethodContext)] in
                defer { once = true }
                return once ? [] : [(0, Params(["collection": "c", "key": "k2", "value": ["n": 2]]), ctx)]
            }.unsynced == nil)
    }
}

@Suite struct PutPipelineTests {
    @Test("a put whose commit cannot be synced is answered unsynced and not run again; writes stop, reads go on")
    func unsyncedPutThroughDaemon() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        _ = try c.call("object.put", ["collection": "s", "key": "a", "value": ["n": 1]])
        let wal = h.database + "-wal"
        // SQLite goes on writing the file it opened, which a restart would not find: the
        // store's sync sees that the WAL at the path is gone.
        #expect(rename(wal, wal + ".aside") == 0)
        var failure: RPCError?
        do {
            _ = try c.call("object.put", ["collection": "s", "key": "b", "value": ["n": 2]])
        } catch ClientError.rpc(let e) {
            failure = e
        }
        #expect(rename(wal + ".aside", wal) == 0)
        #expect(failure?.message.contains("could not be synced") == true, "\(String(describing: failure))")
        // Committed once: there, and the committer did not run the batch again.
        #expect(try c.call("object.get", ["collection": "s", "key": "b"])["value"]?["n"] == 2)
        #expect(try c.call("stats")["objects"] == 2)
        var refused: RPCError?
        do {
            _ = try c.call("object.put", ["collection": "s", "key": "c", "value": ["n": 3]])
        } catch ClientError.rpc(let e) {
            refused = e
        }
        #expect(refused?.message.contains("restart assetd") == true, "\(String(describing: refused))")
        #expect(try c.call("stats")["objects"] == 2)
    }

    @Test("a client gone with puts in flight: they commit in order, and SIGTERM still stops assetd cleanly")
    func clientGoneMidPuts() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        var lines = [UInt8]()
        for i in 0..<300 {
            lines += Array(
                #"{"jsonrpc":"2.0","id":\#(i),"method":"object.put","params":{"collection":"gone","key":"k\#(i)","value":{"i":\#(i)}}}"#
                    .utf8)
            lines.append(10)
        }
        raw.send(lines)
        _ = raw.readLine()  // the first put is answered: the rest are queued or in flight
        shutdown(raw.fd, Int32(SHUT_RDWR))
        #expect(h.stop(signal: SIGTERM) == 0, "assetd did not stop cleanly with a gone client's puts in flight")
        try h.start()
        let c = try h.client()
        let keys = Set(try c.call("object.list", ["collection": "gone", "limit": 1000])["keys"]?.strings ?? [])
        #expect(keys.count >= 1)
        // One connection's puts run one at a time, in order: what is stored has no gaps.
        #expect(keys == Set((0..<keys.count).map { "k\($0)" }), "stored: \(keys.count), with gaps")
    }
}

@Suite struct PutMembersTests {
    @Test("a put over the socket reads its params as parsed: the last of a repeated name, null as sent, as in-process")
    func membersAsParsed() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        func put(_ params: String) -> JSONValue? {
            raw.send(#"{"jsonrpc":"2.0","id":1,"method":"object.put","params":"# + params + "}\n")
            return raw.readLine()
        }
        let repeated = put(#"{"collection":"c","key":"k","value":{"n":1},"owner":"a","value":{"n":2},"owner":"b"}"#)
        #expect(repeated?["result"]?["commit"]?.intValue != nil, "\(repeated?.serialized() ?? "no reply")")
        let object = try h.client().call("object.get", ["collection": "c", "key": "k"])
        #expect(object["value"] == ["n": 2])
        #expect(object["owner"] == "b")
        // The same params in-process (a dictionary, not members) give the same answers.
        var template = Array("/tmp/assetd-members-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(.EIO) }
        let dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // mkdtemp wrote a C string
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir]))
        defer { store.close() }
        let ctx = MethodContext(
            store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
        // nil: stored; else the error's message.
        let cases: [(String, JSONValue, String?)] = [
            (#"{"collection":"c","key":"n","value":null}"#, ["collection": "c", "key": "n", "value": .null], nil),
            (#"{"collection":"c","key":"m"}"#, ["collection": "c", "key": "m"], "invalid params: value is required"),
            (
                #"{"collection":"c","key":"o","value":1,"owner":null}"#,
                ["collection": "c", "key": "o", "value": 1, "owner": .null], nil
            ),
            // The last of a repeated name wins even when it is null.
            (
                #"{"collection":"c","key":"d","value":{"n":1},"value":null}"#,
                ["collection": "c", "key": "d", "value": .null], nil
            ),
            (
                #"{"collection":"c","key":"t","value":1,"owner":1}"#,
                ["collection": "c", "key": "t", "value": 1, "owner": 1],
                "invalid params: owner must be a string"
            ),
        ]
        for (text, params, error) in cases {
            let reply = try #require(put(text))
            #expect(reply["error"]?["message"]?.stringValue == error, "\(text): \(reply.serialized())")
            switch MethodTable.call("object.put", params, ctx) {
            case .success: #expect(error == nil, "\(text) in-process")
            case .failure(let e): #expect(e.message == error, "\(text) in-process")
            }
        }
        // Stored as null, not as the earlier value nor as missing.
        for key in ["n", "d"] {
            let stored = try h.client().call("object.get", ["collection": "c", "key": .string(key)])
            #expect(stored["value"] == .null, "\(key): \(stored.serialized())")
        }
    }
}
