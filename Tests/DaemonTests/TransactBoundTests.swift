// transact's reads, which run in the write transaction, run in process with a context per
// caller: results past control.max_reply_bytes roll the whole transact back with
// reply_too_large (whoever asks); a non-admin's reads past the cascade bound's work roll it
// back with query_rejected, stopped inside the scan; reads under it, or an admin's, commit.

@testable import AssetDaemon
@testable import AssetService
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import GRDB
import Synchronization
import Testing

@Suite struct TransactBoundTests {
    private let folders = TempFolders(prefix: "assetd-transactbound-")

    /// A store with o/big (a value of `valueBytes`) and o/hub with `edges` edges named "e" to
    /// objects of its own.
    private func store(valueBytes: Int = 16 << 10, edges: Int = 0) throws -> Store {
        let dir = try folders.make()
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir]))
        try store.write { tx in
            try tx.put(ObjectRef("o", "big"), value: .string(String(repeating: "v", count: valueBytes)))
            try tx.put(ObjectRef("o", "hub"), value: [:])
            for i in 0..<edges {
                try tx.put(ObjectRef("leaf", "\(i)"), value: [:])
                try tx.addEdge(
                    name: "e", source: ObjectRef("o", "hub"), destination: .object(ObjectRef("leaf", "\(i)")),
                    rules: DeleteRules(rawValue: 0))
            }
        }
        return store
    }

    /// A caller's context; a non-admin's cascade bound is `bound`, as the daemon would set it.
    private func context(_ store: Store, admin: Bool, bound: Int = 10, replyLimit: Int = .max) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: admin ? 0 : 1000, userName: admin ? "root" : "u1000", isAdmin: admin),
            enforceOwnership: false)
        ctx.cascadeLimit = admin ? nil : bound
        ctx.replyLimit = replyLimit
        return ctx
    }

    /// `reads` after a put of o/marker, as one transact.
    private func transact(_ reads: [JSONValue], _ ctx: MethodContext) -> Result<MethodOutcome, RPCError> {
        let put: JSONValue = ["method": "object.put", "params": ["collection": "o", "key": "marker", "value": 1]]
        return MethodTable.call("transact", ["ops": .array([put] + reads)], ctx)
    }

    private func markerPut(_ store: Store) throws -> Bool {
        try store.read { try $0.get(ObjectRef("o", "marker")) } != nil
    }

    private static let getBig: JSONValue = ["method": "object.get", "params": ["collection": "o", "key": "big"]]
    private static let countByName: JSONValue = ["method": "edge.count", "params": ["name": "e"]]

    @Test("results past max_reply_bytes roll the transact back, an admin's too", arguments: [true, false])
    func resultsTooLarge(admin: Bool) throws {
        let store = try store()
        defer { store.close() }
        let ctx = context(store, admin: admin, replyLimit: 64 << 10)
        guard case .failure(let e) = transact(Array(repeating: Self.getBig, count: 8), ctx) else {
            Issue.record("eight gets of 16 KiB were answered under a limit of 64 KiB")
            return
        }
        #expect(e.stableCode == StoreError.Code.replyTooLarge.rawValue)
        #expect(e.message.hasPrefix("ops[4]: "))
        #expect(try !markerPut(store))
        // Under the limit: committed, with every result.
        let done = try transact(Array(repeating: Self.getBig, count: 3), ctx).get()
        #expect(done.result["results"]?.arrayValue?.count == 4)
        #expect(try markerPut(store))
    }

    @Test("a non-admin's reads past the bound's work roll the transact back; an admin's commit")
    func readsBounded() throws {
        let store = try store(edges: 3000)
        defer { store.close() }
        // 20 scans of 3,000 edges: far past what a bound of 10 allows (110 edges' work).
        let scans = Array(repeating: Self.countByName, count: 20)
        guard case .failure(let e) = transact(scans, context(store, admin: false)) else {
            Issue.record("a non-admin's 20 scans were answered under a bound of 10")
            return
        }
        #expect(e.stableCode == StoreError.Code.queryRejected.rawValue)
        #expect(e.message.contains("control.max_cascade_objects = 10"))
        #expect(try !markerPut(store))
        let done = try transact(scans, context(store, admin: true)).get()
        #expect(done.result["results"]?.arrayValue?.last?["count"]?.intValue == 3000)
        #expect(try markerPut(store))
    }

    @Test("one scan is stopped inside its statement, not after it")
    func scanInterrupted() throws {
        let store = try store(edges: 3000)
        defer { store.close() }
        // A bound of 1: 20 calls, against about 120 that counting 3,000 rows takes.
        let allowed = WriteTransaction.readCalls(1)
        #expect(allowed == 20)
        var spent = 0
        let outcome = Result {
            try store.write { tx in
                defer { spent = allowed - (tx.readAllowance?.left ?? allowed) }
                return try tx.boundedRead(1) { try tx.edgeCount(EdgeFilter(name: "e")) }
            }
        }
        guard case .failure(let e as StoreError) = outcome else {
            Issue.record("a scan of 3,000 edges was answered under a bound of 10: \(outcome)")
            return
        }
        #expect(e.code == .queryRejected)
        // The handler stopped it at the first call past the allowance.
        #expect(spent == allowed + 1)
    }

    @Test("touches and flushes of an object holding many files stay within the bound")
    func touchFlushCheap() throws {
        let store = try store()
        defer { store.close() }
        let dir = (store.path as NSString).deletingLastPathComponent
        try store.write { tx in
            for i in 0..<3000 {
                try tx.addEdge(
                    name: "f", source: ObjectRef("o", "hub"), destination: .file("\(dir)/missing-\(i)"),
                    rules: DeleteRules(rawValue: 0))
            }
        }
        // Each flush summed the hub's 3,000 files again after a touch: 30 times past a bound of 10.
        let touch: JSONValue = ["method": "object.touch", "params": ["collection": "o", "key": "hub"]]
        let flush: JSONValue = ["method": "flush"]
        let pairs = (0..<20).flatMap { _ in [touch, flush] }
        let done = try transact(pairs, context(store, admin: false)).get()
        #expect(done.result["results"]?.arrayValue?.count == 41)
        let files = try store.read { try $0.get(ObjectRef("o", "hub")) }?.files.count
        #expect(files == 3000)
    }

    @Test("a get of an object the transaction deleted does not read its row")
    func hiddenGetNotCopied() throws {
        let store = try store()
        defer { store.close() }
        let rowReads = Mutex(0)
        try store.write { tx in
            tx.db.trace { event in
                if case .statement(let s) = event, s.sql.contains("SELECT id, value, metadata") {
                    rowReads.withLock { $0 += 1 }
                }
            }
            // Counted while it exists: what is watched is the row's read.
            #expect(try tx.get(ObjectRef("o", "big")) != nil)
            #expect(rowReads.withLock { $0 } == 1)
            try tx.delete(ObjectRef("o", "big"))
            for _ in 0..<5 { #expect(try tx.get(ObjectRef("o", "big")) == nil) }
            #expect(try tx.owner(ObjectRef("o", "big")) == nil)
            #expect(try tx.owner(ObjectRef("o", "hub")) == StoreConfiguration.processUserName())
            tx.db.trace(options: [], nil)
        }
        #expect(rowReads.withLock { $0 } == 1)
    }

    @Test("a touch and a file edge before one flush: the row's figures count the new file")
    func touchThenFileEdge() throws {
        let store = try store()
        defer { store.close() }
        let dir = (store.path as NSString).deletingLastPathComponent
        #expect(FileManager.default.createFile(atPath: dir + "/f", contents: Data("12345".utf8)))
        let ops: [JSONValue] = [
            ["method": "object.touch", "params": ["collection": "o", "key": "hub"]],
            [
                "method": "edge.add",
                "params": [
                    "name": "f", "source": ["collection": "o", "key": "hub"],
                    "destination": ["file": .string(dir + "/f")],
                ],
            ],
            ["method": "flush"], ["method": "object.touch", "params": ["collection": "o", "key": "hub"]],
        ]
        _ = try transact(ops, context(store, admin: true)).get()
        let figures = try store.read { tx in
            try Row.fetchOne(tx.db, sql: "SELECT size, files FROM object WHERE collection = 'o' AND key = 'hub'")
        }
        #expect(figures?[0] as Int64? == 5)
        #expect(figures?[1] as Int64? == 1)
    }

    @Test("a non-admin's reads within the bound commit, edge.find and object.list too")
    func readsWithinBound() throws {
        let store = try store(edges: 5)
        defer { store.close() }
        let reads: [JSONValue] = [
            Self.getBig, Self.countByName,
            ["method": "edge.find", "params": ["source": ["collection": "o", "key": "hub"]]],
            ["method": "object.list", "params": ["collection": "leaf"]],
        ]
        let done = try transact(reads, context(store, admin: false)).get()
        let results = try #require(done.result["results"]?.arrayValue)
        #expect(results[2]["count"]?.intValue == 5)
        #expect(results[3]["edges"]?.arrayValue?.count == 5)
        #expect(results[4]["keys"]?.arrayValue?.count == 5)
        #expect(try markerPut(store))
    }
}
