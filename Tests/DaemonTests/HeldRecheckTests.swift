// A put of an existing object reads again the files it holds through edges its value does not
// name, with a non-admin's check under enforce_ownership (the walk): once a transaction for a
// caller's uid however often the object is put in it (transact, group commit), and a bounded
// caller's reads are charged to its put's allowance by their paths' depth, so a put of an
// object holding more files than that is refused (query_rejected) instead of holding the
// writer; in a group commit each put has an allowance of its own, and one past it fails alone.
// Looks are counted by the probe's test hook, which every look calls with its root first
// (`FileProbe.stepHooks`).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown a folder to another uid"))
struct HeldRecheckTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-heldrecheck-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// A store whose root holds a folder of `uid`'s for each of `uids`, with `files` files of
    /// theirs (`nested` folders further down), each held by their object c/<uid> through a
    /// manual edge; its root.
    private func holding(_ files: Int, _ uids: [UInt32], nested: Int = 0) throws -> (Store, String) {
        let (store, root) = try openStore()
        for uid in uids {
            var dir = root + "/u\(uid)"
            for level in 0...nested {
                if level > 0 { dir += "/d\(level)" }
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
                #expect(chown(dir, uid, uid) == 0 && chmod(dir, 0o755) == 0)
            }
            let ctx = context(store, uid: uid)
            try call("object.put", put(uid), ctx)
            var ops = [JSONValue]()
            for i in 0..<files {
                let path = dir + "/f\(i).bin"
                #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
                #expect(chown(path, uid, uid) == 0)
                let edge: JSONValue = [
                    "name": "f", "source": ["collection": "c", "key": .string("\(uid)")],
                    "destination": ["file": .string(path)], "rules": ["deleteDestinationIfSourceDeleted"],
                ]
                ops.append(["method": "edge.add", "params": edge])
            }
            try call("transact", ["ops": .array(ops)], ctx)
        }
        return (store, root)
    }

    /// The params of a put of c/<uid> with an empty value.
    private func put(_ uid: UInt32) -> JSONValue {
        ["collection": "c", "key": .string("\(uid)"), "value": [:]]
    }

    /// The same by an admin, keeping `uid` the owner.
    private func adminPut(_ uid: UInt32) -> JSONValue {
        ["collection": "c", "key": .string("\(uid)"), "value": [:], "owner": .string("u\(uid)")]
    }

    @discardableResult
    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    /// A non-admin's context bounded at `limit` objects, as the daemon would set it.
    private func bounded(_ store: Store, _ uid: UInt32, _ limit: Int?) -> MethodContext {
        var ctx = context(store, uid: uid)
        ctx.cascadeLimit = limit
        return ctx
    }

    /// How many looks at `root` `body` took (with `steps`, every component's step below it).
    private func looks<T>(_ root: String, steps: Bool = false, _ body: () throws -> T) rethrows -> (Int, T) {
        let count = Mutex(0)
        FileProbe.stepHooks.withLock { $0[root] = { p in if steps || p == root { count.withLock { $0 += 1 } } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let value = try body()
        return (count.withLock { $0 }, value)
    }

    @Test("fifty puts of an object holding 200 files in one transact read them once")
    func transactReadsOnce() throws {
        let (store, root) = try holding(200, [eve])
        defer { store.close() }
        let ctx = bounded(store, eve, 10_000)
        let ops = JSONValue.array(Array(repeating: ["method": "object.put", "params": put(eve)], count: 50))
        let (n, _) = try looks(root) { try call("transact", ["ops": ops], ctx) }
        #expect(n == 200)
        // A transaction later reads them again.
        let (again, _) = try looks(root) { try call("object.put", put(eve), ctx) }
        #expect(again == 200)
    }

    @Test("fifty puts of an object holding 200 files in one group commit read them once")
    func groupCommitReadsOnce() throws {
        let (store, root) = try holding(200, [eve])
        defer { store.close() }
        let ctx = bounded(store, eve, 10_000)
        let inputs = Array(repeating: (put(eve), ctx), count: 50)
        let (n, done) = looks(root) { PutBatch.run(store, inputs) }
        #expect(n == 200)
        #expect(done.commits.count == 1)
        #expect(done.results.allSatisfy { if case .success = $0.1 { true } else { false } })
    }

    @Test("a re-read undone with its savepoint (a group commit's retry) is made again by the next put")
    func undoneReadAgain() throws {
        let (store, root) = try holding(200, [eve])
        defer { store.close() }
        struct Undo: Error {}
        let ref = ObjectRef("c", "\(eve)")
        let (n, _) = try looks(root) {
            try store.write { tx in
                _ = try? tx.attempt { () throws -> Void in
                    try tx.put(ref, value: .object([:]))
                    throw Undo()
                }
                try tx.put(ref, value: .object([:]))
            }
        }
        #expect(n == 400)
    }

    @Test("a bounded put of an object holding more files than its allowance is refused before any look")
    func pastAllowanceRefused() throws {
        // At a bound of 10, 110 calls: 200 files are past it, 100 are not.
        let (store, root) = try holding(200, [eve])
        defer { store.close() }
        let commit = try call("ping", [:], context(store, uid: 0, admin: true))["commit"]
        let (n, refusal) = looks(root) { MethodTable.call("object.put", put(eve), bounded(store, eve, 10)) }
        #expect(n == 0)
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected")
        #expect(e.message.contains("control.max_cascade_objects = 10"))
        #expect(try call("ping", [:], context(store, uid: 0, admin: true))["commit"] == commit)
        // In a transact too; unbounded, or an admin's, it commits.
        let ops = JSONValue.array([["method": "object.put", "params": put(eve)]])
        guard case .failure(let inTransact) = MethodTable.call("transact", ["ops": ops], bounded(store, eve, 10))
        else {
            Issue.record("the transact was answered")
            return
        }
        #expect(inTransact.stableCode == "query_rejected")
        #expect(inTransact.message.hasPrefix("ops[0]:"), "\(inTransact.message)")
        try call("object.put", put(eve), bounded(store, eve, nil))
        try call("object.put", put(eve), context(store, uid: 0, admin: true))
    }

    @Test("a bounded put of an object holding fewer files than its allowance commits")
    func underAllowanceCommits() throws {
        // 30 files two components below the root: 90 of 110 calls.
        let (store, _) = try holding(30, [eve])
        defer { store.close() }
        let ops = JSONValue.array(Array(repeating: ["method": "object.put", "params": put(eve)], count: 50))
        try call("transact", ["ops": ops], bounded(store, eve, 10))
        try call("object.put", put(eve), bounded(store, eve, 10))
    }

    @Test("a checked look is charged for each component: 20 files six deep are past a bound of 10")
    func deepFilesCharged() throws {
        // 20 × (1 + 6) = 140 calls of 110: refused before any step.
        let (store, root) = try holding(20, [eve], nested: 4)
        defer { store.close() }
        let (n, refusal) = looks(root, steps: true) {
            MethodTable.call("object.put", put(eve), bounded(store, eve, 10))
        }
        #expect(n == 0)
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected")
        // Two deep, 20 × 3 = 60: it commits.
        let (shallow, shallowRoot) = try holding(20, [eve])
        defer { shallow.close() }
        let (m, _) = try looks(shallowRoot) { try call("object.put", put(eve), bounded(shallow, eve, 10)) }
        #expect(m == 20)
    }

    @Test("each put of a group commit has its own allowance, an admin's none (in the retry too)")
    func batchAllowancePerPut() throws {
        // 30 files each, 90 calls of 110: two together are past one allowance.
        let (store, _) = try holding(30, [bob, eve])
        defer { store.close() }
        let denied = (put(bob), bounded(store, eve, 10))  // Bob's object: permission_denied, so a retry
        let done = PutBatch.run(
            store,
            [
                denied, (put(eve), bounded(store, eve, 10)), (put(bob), bounded(store, bob, 10)),
                (adminPut(eve), context(store, uid: 0, admin: true)),
            ])
        #expect(codes(done) == ["permission_denied", nil, nil, nil])
        #expect(done.commits.count == 1)
        // The plain run alike: one commit.
        let plain = PutBatch.run(
            store,
            [
                (put(eve), bounded(store, eve, 10)), (put(bob), bounded(store, bob, 10)),
                (adminPut(bob), context(store, uid: 0, admin: true)),
            ])
        #expect(codes(plain) == [nil, nil, nil])
        #expect(plain.commits.count == 1)
    }

    @Test("a put past its allowance in a group commit fails alone; the others commit once")
    func batchRefusalFailsAlone() throws {
        // At a bound of 1, 20 calls: Eve's 30 files (90) are past it.
        let (store, _) = try holding(30, [bob, eve])
        defer { store.close() }
        let other: JSONValue = ["collection": "c", "key": "other", "value": [:]]
        let done = PutBatch.run(
            store,
            [
                (put(eve), bounded(store, eve, 1)), (put(bob), bounded(store, bob, nil)),
                (other, bounded(store, bob, nil)),
            ])
        #expect(codes(done) == ["query_rejected", nil, nil])
        #expect(done.commits.count == 1)
    }

    @Test("an admin's put and a caller's of one object in a group commit each read its files")
    func readOncePerUid() throws {
        let (store, root) = try holding(200, [eve])
        defer { store.close() }
        let (n, done) = looks(root) {
            PutBatch.run(
                store, [(adminPut(eve), context(store, uid: 0, admin: true)), (put(eve), bounded(store, eve, 10_000))])
        }
        #expect(codes(done) == [nil, nil])
        #expect(n == 400)
    }

    /// Each answer's error code, nil for a success.
    private func codes(_ done: PutBatch.Done<Int>) -> [String?] {
        done.results.map { if case .failure(let e) = $0.1 { e.stableCode } else { nil } }
    }
}
