// control.max_cascade_objects through the methods, run in process with a context per caller:
// a non-admin's request whose rules would delete more objects than the bound is refused with
// cascade_limit and changes nothing (object.delete, edge.remove with a reason, transact, and a
// put that drops a derived edge, in a group commit with an admin's put); under it, or an admin's,
// commits, in a group commit with a non-admin's put too; a batch the bound refused runs its puts
// alone at once.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct CascadeLimitMethodTests {
    private let folders = TempFolders(prefix: "assetd-cascadelimit-")

    /// A store where h/r is held by `leaves` leaf objects, each holding a file, that go with it
    /// (leaf's template: `of` names the holder, deleteSourceIfDestinationDeleted); and the files.
    private func holder(leaves: Int) throws -> (Store, [String]) {
        let dir = try folders.make()
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [root]))
        let admin = context(store, admin: true)
        let template: JSONValue = [
            "name": "of", "field": "of", "to": "h", "rules": ["deleteSourceIfDestinationDeleted"],
        ]
        try call("template.set", ["collection": "leaf", "edges": [template]], admin)
        try call("object.put", ["collection": "h", "key": "r", "value": [:]], admin)
        var files = [String]()
        for i in 0..<leaves {
            files.append("\(root)/leaf-\(i).bin")
            #expect(FileManager.default.createFile(atPath: files[i], contents: Data("x".utf8)))
            let value: JSONValue = ["of": "r", "file": .string(files[i])]
            try call("object.put", ["collection": "leaf", "key": .string("\(i)"), "value": value], admin)
        }
        return (store, files)
    }

    /// A caller's context; a non-admin's bound is 10, as the daemon would set it.
    private func context(_ store: Store, admin: Bool = false) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: admin ? 0 : 1000, userName: admin ? "root" : "u1000", isAdmin: admin),
            enforceOwnership: false)
        ctx.cascadeLimit = admin ? nil : 10
        return ctx
    }

    @discardableResult
    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    /// The refusal of `method`, or nil if it was answered.
    private func refusal(_ method: String, _ params: JSONValue, _ ctx: MethodContext) -> RPCError? {
        guard case .failure(let e) = MethodTable.call(method, params, ctx) else { return nil }
        return e
    }

    /// Whether the holder, all its leaves, their edges (and `more` edges) and files are as set
    /// up, nothing queued, and the last commit is still `commit`.
    private func untouched(_ store: Store, _ files: [String], commit: Int64, more: Int = 0) throws -> Bool {
        let admin = context(store, admin: true)
        let leaves = try call("object.list", ["collection": "leaf", "limit": 1000], admin)["keys"]?.arrayValue
        let edges = try store.read { try $0.edgeCount(EdgeFilter()) }
        return try call("object.get", ["collection": "h", "key": "r"], admin) != .null && leaves?.count == files.count
            && edges == 2 * files.count + more && files.allSatisfy { FileManager.default.fileExists(atPath: $0) }
            && store.pending().isEmpty && call("ping", [:], admin)["commit"]?.intValue == commit
    }

    private func lastCommit(_ store: Store) throws -> Int64 {
        try #require(try call("ping", [:], context(store, admin: true))["commit"]?.intValue)
    }

    @Test("a non-admin's delete cascading past the bound is refused and changes nothing")
    func deleteRefused() throws {
        let (store, files) = try holder(leaves: 11)
        defer { store.close() }
        let commit = try lastCommit(store)
        let e = refusal("object.delete", ["collection": "h", "key": "r"], context(store))
        #expect(e?.stableCode == "cascade_limit" && e?.code == RPCError.applicationCode)
        #expect(e?.message.contains("control.max_cascade_objects = 10") == true, "\(String(describing: e))")
        #expect(e?.data?["detail"]?["limit"] == "control.max_cascade_objects" && e?.data?["detail"]?["value"] == 10)
        #expect(try untouched(store, files, commit: commit))
    }

    @Test("a non-admin's delete cascading to the bound commits; an admin's past it too", arguments: [false, true])
    func deleteCommits(admin: Bool) throws {
        let (store, _) = try holder(leaves: admin ? 30 : 10)
        defer { store.close() }
        let r = try call("object.delete", ["collection": "h", "key": "r"], context(store, admin: admin))
        #expect(r["deleted"]?.arrayValue?.count == (admin ? 31 : 11))
        #expect(try store.pending().count == (admin ? 30 : 10))
    }

    @Test("edge.remove firing a cascade past the bound is refused")
    func edgeRemoveRefused() throws {
        let (store, files) = try holder(leaves: 11)
        defer { store.close() }
        let admin = context(store, admin: true)
        try call("object.put", ["collection": "top", "key": "t", "value": [:]], admin)
        try call(
            "edge.add",
            [
                "name": "owns", "source": ["collection": "top", "key": "t"],
                "destination": ["collection": "h", "key": "r"], "rules": ["deleteDestinationIfSourceDeleted"],
            ], admin)
        let commit = try lastCommit(store)
        let params: JSONValue = [
            "name": "owns", "source": ["collection": "top", "key": "t"],
            "destination": ["collection": "h", "key": "r"],
            "reason": "sourceDeleted",
        ]
        #expect(refusal("edge.remove", params, context(store))?.stableCode == "cascade_limit")
        #expect(try store.read { try $0.edgeCount(EdgeFilter(name: "owns")) } == 1)
        #expect(try untouched(store, files, commit: commit, more: 1))
        #expect(try call("edge.remove", params, admin)["removed"] == true)
        #expect(try call("object.list", ["collection": "leaf"], admin)["keys"] == [])
    }

    @Test("transact counts the cascades of all its ops against one bound")
    func transactRefused() throws {
        let (store, files) = try holder(leaves: 6)
        defer { store.close() }
        let admin = context(store, admin: true)
        // A second holder of six leaves: each delete alone is under the bound, both are over.
        try call("object.put", ["collection": "h", "key": "s", "value": [:]], admin)
        for i in 0..<6 {
            try call("object.put", ["collection": "leaf", "key": .string("s\(i)"), "value": ["of": "s"]], admin)
        }
        let commit = try lastCommit(store)
        let ops: JSONValue = [
            ["method": "object.delete", "params": ["collection": "h", "key": "r"]],
            ["method": "object.delete", "params": ["collection": "h", "key": "s"]],
        ]
        #expect(refusal("transact", ["ops": ops], context(store))?.stableCode == "cascade_limit")
        #expect(try lastCommit(store) == commit)
        #expect(try call("object.list", ["collection": "leaf"], admin)["keys"]?.arrayValue?.count == 12)
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(try store.pending().isEmpty)
    }

    /// The holder of `holder(leaves: 11)` and p/p, whose value names the leaves it owns: a
    /// put of p/p without them drops eleven edges whose rule deletes their destination.
    private func owner(_ store: Store) throws -> JSONValue {
        let admin = context(store, admin: true)
        let owning: JSONValue = [
            "name": "owns", "field": "owns", "to": "leaf", "rules": ["deleteDestinationIfSourceDeleted"],
        ]
        try call("template.set", ["collection": "p", "edges": [owning]], admin)
        let keys = JSONValue.array((0..<11).map { .string("\($0)") })
        try call("object.put", ["collection": "p", "key": "p", "value": ["owns": keys]], admin)
        return keys
    }

    @Test("in a group commit, a non-admin's put dropping an edge past the bound is refused alone")
    func putInBatchRefused() throws {
        let (store, files) = try holder(leaves: 11)
        defer { store.close() }
        let admin = context(store, admin: true)
        let keys = try owner(store)
        let inputs: [(JSONValue, MethodContext)] = [
            (["collection": "other", "key": "a", "value": ["n": 1]], admin),
            (["collection": "p", "key": "p", "value": [:]], context(store)),
            (["collection": "other", "key": "b", "value": ["n": 2]], admin),
        ]
        let results = PutBatch.run(store, inputs).results.map(\.1)
        #expect(results.count == 3)
        guard results.count == 3, case .failure(let e) = results[1] else {
            Issue.record("the non-admin's put was committed")
            return
        }
        #expect(e.stableCode == "cascade_limit")
        #expect((try? results[0].get()) != nil && (try? results[2].get()) != nil)
        #expect(try call("object.list", ["collection": "other"], admin)["keys"] == ["a", "b"])
        #expect(try call("object.get", ["collection": "p", "key": "p"], admin)["value"] == ["owns": keys])
        #expect(try call("object.list", ["collection": "leaf"], admin)["keys"]?.arrayValue?.count == 11)
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(try store.pending().isEmpty)
    }

    @Test("an admin's put cascading past the bound, batched with a non-admin's put: both commit")
    func adminPutInBatch() throws {
        let (store, _) = try holder(leaves: 11)
        defer { store.close() }
        let admin = context(store, admin: true)
        _ = try owner(store)
        let inputs: [(JSONValue, MethodContext)] = [
            (["collection": "p", "key": "p", "value": [:]], admin),
            (["collection": "other", "key": "a", "value": ["n": 1]], context(store)),
        ]
        let results = PutBatch.run(store, inputs).results.map(\.1)
        #expect(results.count == 2 && results.allSatisfy { (try? $0.get()) != nil })
        #expect(try call("object.list", ["collection": "other"], admin)["keys"] == ["a"])
        #expect(try call("object.list", ["collection": "leaf"], admin)["keys"] == [])
        #expect(try store.pending().count == 11)
    }

    @Test("a batch refused by the bound runs its puts alone, not again together first")
    func boundRefusalSkipsTheRetry() throws {
        let (store, _) = try holder(leaves: 11)
        defer { store.close() }
        let admin = context(store, admin: true)
        _ = try owner(store)
        // Rows changed by the writer, rolled back or not: what a run cost.
        func changes(_ run: () -> Void) throws -> Int {
            let before = try store.pool.write { $0.totalChangesCount }
            run()
            return try store.pool.write { $0.totalChangesCount } - before
        }
        let offending: (JSONValue, MethodContext) = (["collection": "p", "key": "p", "value": [:]], context(store))
        // A batch of one is refused twice (the batch, then the put alone), in any case.
        let refused = try changes { _ = PutBatch.run(store, [offending]) }
        let other = try changes {
            _ = PutBatch.run(store, [(["collection": "other", "key": "z", "value": ["n": 0]], admin)])
        }
        let batch: [(JSONValue, MethodContext)] = [
            (["collection": "other", "key": "a", "value": ["n": 1]], admin), offending,
        ]
        let all = try changes { _ = PutBatch.run(store, batch) }
        // The batch, then each put alone: a retry of the batch in savepoints would have been
        // one refusal and one other put more.
        #expect(refused > 10 && all <= refused + 2 * other + 2, "\(refused) \(other) \(all)")
    }
}

@Suite struct CascadeLimitDaemonTests {
    @Test(
        "the daemon bounds nobody's cascade by control.max_cascade_objects and not an admin's",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func daemonBoundsNonAdmins() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nmax_cascade_objects = 5")
        let c = try h.client(timeout: 60)
        for holder in ["r", "s"] {
            try c.putObject("h", holder)
            for i in 0..<6 {
                try c.putObject("leaf", "\(holder)\(i)")
                try c.addEdge(
                    "of", from: ref("leaf", "\(holder)\(i)"), to: ref("h", holder),
                    rules: ["deleteSourceIfDestinationDeleted"])
            }
        }
        let refused = try h.assetctlAsNobody("rm", "h", "r")
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("control.max_cascade_objects = 5"), "\(refused.stderr)")
        #expect(try c.call("object.list", ["collection": "leaf"])["keys"]?.arrayValue?.count == 12)
        #expect(try c.getObject("h", "r") != .null)
        // The daemon's own uid is an admin: not bounded.
        #expect(try c.deleteObject("h", "s")["deleted"]?.arrayValue?.count == 7)
    }
}
