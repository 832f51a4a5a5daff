// The reply of a write that deleted (object.delete, transact) under control.max_reply_bytes,
// run in process: a reply that fits is the same as with no limit; past it, each list keeps a
// prefix that fits, with its exact total and `truncated`, and the commit is the whole cascade.

@testable import AssetDaemon
@testable import AssetService
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct DeletionReplyTests {
    private let folders = TempFolders(prefix: "assetd-deletionreply-")
    private static let id: RPCID = 7

    /// A store whose object roots/r is held by `leaves` objects (each holding a file of its
    /// own) that go with it, and its root folder.
    private func cascade(leaves: Int) throws -> (Store, String) {
        let dir = try folders.make()
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [root]))
        let ctx = context(store)
        let template: JSONValue = [
            "name": "of", "field": "of", "to": "roots", "rules": ["deleteSourceIfDestinationDeleted"],
        ]
        _ = try call("template.set", ["collection": "leaf", "edges": [template]], ctx)
        _ = try call("object.put", ["collection": "roots", "key": "r", "value": [:]], ctx)
        var ops = [JSONValue]()
        for i in 0..<leaves {
            let path = "\(root)/leaf-\(i).bin"
            #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
            // Escapes and non-ASCII in the names: measured as rendered, not as stored.
            let value: JSONValue = ["of": "r", "file": .string(path)]
            ops.append([
                "method": "object.put",
                "params": ["collection": "leaf", "key": .string("k\"\u{1}é-\(i)"), "value": value],
            ])
        }
        _ = try call("transact", ["ops": .array(ops)], ctx)
        return (store, root)
    }

    private func context(_ store: Store, limit: Int = .max, id: RPCID = Self.id) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
        ctx.replyLimit = limit
        ctx.requestID = id
        return ctx
    }

    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    private static let deleteRoot: JSONValue = ["collection": "roots", "key": "r"]

    @Test("a deletion reply that fits max_reply_bytes exactly is the reply with no limit")
    func fittingReplyUnchanged() throws {
        let (a, rootA) = try cascade(leaves: 40)
        defer { a.close() }
        let full = try call("object.delete", Self.deleteRoot, context(a))
        #expect(full["deleted"]?.arrayValue?.count == 41 && full["unlinks_queued"]?.arrayValue?.count == 40)
        #expect(full["truncated"] == nil && full["deleted_total"] == nil)
        let size = RPCLine.result(id: Self.id, full).count

        // Another store alike, whose root's path has the same length.
        let (b, rootB) = try cascade(leaves: 40)
        defer { b.close() }
        let fitting = try call("object.delete", Self.deleteRoot, context(b, limit: size))
        let expected = String(decoding: RPCLine.result(id: Self.id, full), as: UTF8.self)
            .replacingOccurrences(of: rootA, with: rootB)
        #expect(String(decoding: RPCLine.result(id: Self.id, fitting), as: UTF8.self) == expected)
    }

    @Test("a cascade past max_reply_bytes answers prefixes that fit, exact totals, and commits all of it")
    func cutReply() throws {
        let (a, rootA) = try cascade(leaves: 40)
        defer { a.close() }
        let full = try call("object.delete", Self.deleteRoot, context(a))
        let size = RPCLine.result(id: Self.id, full).count
        let allDeleted = try #require(full["deleted"]?.arrayValue)
        // Relative to their root: each store has its own.
        func names(_ paths: [JSONValue], _ root: String) -> [String] {
            paths.compactMap { $0.stringValue?.replacingOccurrences(of: root, with: "") }
        }
        let allQueued = names(try #require(full["unlinks_queued"]?.arrayValue), rootA)

        for limit in [size - 1, size / 2, 1024, 200] {
            let (b, root) = try cascade(leaves: 40)
            defer { b.close() }
            let cut = try call("object.delete", Self.deleteRoot, context(b, limit: limit))
            #expect(RPCLine.result(id: Self.id, cut).count <= limit, "limit \(limit)")
            #expect(cut["truncated"] == true && cut["deleted_total"] == 41 && cut["unlinks_queued_total"] == 40)
            #expect(cut["commit"] == full["commit"])
            let deleted = try #require(cut["deleted"]?.arrayValue)
            let queued = names(try #require(cut["unlinks_queued"]?.arrayValue), root)
            #expect(Array(allDeleted.prefix(deleted.count)) == deleted)
            #expect(Array(allQueued.prefix(queued.count)) == queued)
            #expect(deleted.count + queued.count < 81)
            if limit >= 1024 { #expect(!deleted.isEmpty && !queued.isEmpty, "both lists get room") }
            // The commit is the whole cascade, whatever its reply holds.
            #expect(try call("object.list", ["collection": "leaf"], context(b))["keys"] == [])
            #expect(try b.pending().count == 40)
            #expect(try b.pending().allSatisfy { $0.path.hasPrefix(root) })
        }
    }

    @Test("transact keeps every op's result and cuts only the lists")
    func transactCut() throws {
        let (store, _) = try cascade(leaves: 30)
        defer { store.close() }
        let ops: JSONValue = [
            ["method": "object.put", "params": ["collection": "other", "key": "o", "value": ["n": 1]]],
            ["method": "object.delete", "params": Self.deleteRoot],
            ["method": "object.get", "params": ["collection": "other", "key": "o"]],
        ]
        let r = try call("transact", ["ops": ops], context(store, limit: 1200))
        #expect(RPCLine.result(id: Self.id, r).count <= 1200)
        let results = try #require(r["results"]?.arrayValue)
        #expect(results.count == 3 && results[2]["value"] == ["n": 1])
        #expect(r["truncated"] == true && r["deleted_total"] == 31 && r["unlinks_queued_total"] == 30)
        #expect(r["deleted"]?.arrayValue?.first == Self.deleteRoot)
    }

    @Test("a long string request id, with escapes, is measured in the cut too")
    func longRequestID() throws {
        // 480 bytes as rendered, 240 as stored.
        let (store, _) = try cascade(leaves: 40)
        defer { store.close() }
        let id = RPCID(.string(String(repeating: "id\"\u{1}é", count: 40)))
        let r = try call("object.delete", Self.deleteRoot, context(store, limit: 1024, id: id))
        #expect(RPCLine.result(id: id, r).count <= 1024)
        #expect(r["truncated"] == true && r["deleted_total"] == 41 && r["unlinks_queued_total"] == 40)
        #expect(r["deleted"]?.arrayValue?.isEmpty == false)
    }
}
