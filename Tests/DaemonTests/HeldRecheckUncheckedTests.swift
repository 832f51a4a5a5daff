// HeldRecheckTests without enforce_ownership, so without root: a put's re-read of its held
// files is the unchecked `openat2`, still once a transaction and charged to a bounded caller's
// allowance (1 + a sixteenth of the components below the root, 1 here).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized)
struct HeldRecheckUncheckedTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-heldunchecked-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// A store whose object c/o holds `files` files below its root through manual edges; its root.
    private func holding(_ files: Int) throws -> (Store, String) {
        let (store, root) = try openStore()
        try call("object.put", put, unchecked(store, nil))
        var ops = [JSONValue]()
        for i in 0..<files {
            let path = root + "/f\(i).bin"
            #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
            let edge: JSONValue = [
                "name": "f", "source": ["collection": "c", "key": "o"], "destination": ["file": .string(path)],
                "rules": ["deleteDestinationIfSourceDeleted"],
            ]
            ops.append(["method": "edge.add", "params": edge])
        }
        try call("transact", ["ops": .array(ops)], unchecked(store, nil))
        return (store, root)
    }

    private let put: JSONValue = ["collection": "c", "key": "o", "value": [:]]

    @discardableResult
    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    /// Eve's context without enforce_ownership, bounded at `limit` objects.
    private func unchecked(_ store: Store, _ limit: Int?) -> MethodContext {
        var ctx = context(store, uid: eve, enforce: false)
        ctx.cascadeLimit = limit
        return ctx
    }

    /// How many looks at `root` `body` took.
    private func looks<T>(_ root: String, _ body: () throws -> T) rethrows -> (Int, T) {
        let count = Mutex(0)
        FileProbe.stepHooks.withLock { $0[root] = { p in if p == root { count.withLock { $0 += 1 } } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let value = try body()
        return (count.withLock { $0 }, value)
    }

    @Test("fifty unchecked puts of an object in one transact, or one group commit, read its files once")
    func readOnce() throws {
        let (store, root) = try holding(100)
        defer { store.close() }
        let ops = JSONValue.array(Array(repeating: ["method": "object.put", "params": put], count: 50))
        let (n, _) = try looks(root) { try call("transact", ["ops": ops], unchecked(store, 10)) }
        #expect(n == 100)
        let (m, done) = looks(root) { PutBatch.run(store, Array(repeating: (put, unchecked(store, 10)), count: 50)) }
        #expect(m == 100)
        #expect(done.commits.count == 1)
        #expect(done.results.allSatisfy { if case .success = $0.1 { true } else { false } })
    }

    @Test("an unchecked bounded put of an object holding more files than its allowance is refused before any look")
    func pastAllowanceRefused() throws {
        // At a bound of 10, 110 calls, one a file here: 200 files are past it.
        let (store, root) = try holding(200)
        defer { store.close() }
        let (n, refusal) = looks(root) { MethodTable.call("object.put", put, unchecked(store, 10)) }
        #expect(n == 0)
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected")
        try call("object.put", put, unchecked(store, nil))
    }
}
