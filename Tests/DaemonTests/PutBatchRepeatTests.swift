// Two puts of one object in one group commit do what they would one after the other: the
// file only the first put named is registered and then released by the second, so it is
// queued for unlinking rather than left on disk unmanaged (DESIGN.md, group commit).

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct PutBatchRepeatTests {
    private let folders = TempFolders(prefix: "assetd-batchrepeat-")

    /// A store in a fresh temp folder with one root holding files a, b and c, and that root.
    private func openStore() throws -> (Store, String) {
        let dir = try folders.make()
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for name in ["a", "b", "c"] { try Data(count: 10).write(to: URL(fileURLWithPath: root + "/" + name)) }
        return (try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [root])), root)
    }

    private let ctx = { (store: Store) in
        MethodContext(store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: false)
    }

    private func put(_ key: String, _ path: String) -> JSONValue {
        ["collection": "c", "key": .string(key), "value": ["file": .string(path)]]
    }

    private func queued(_ store: Store) throws -> [String] {
        try store.pending().map(\.path).sorted()
    }

    /// Which of the root's files a, b and c the registry holds.
    private func registered(_ store: Store, _ root: String) throws -> [String] {
        try store.read { r in try ["a", "b", "c"].map { root + "/" + $0 }.filter { try r.file($0) != nil } }
    }

    @Test(
        "X put with file a, then with file b, in one batch: a is queued as if they had committed apart",
        arguments: [false, true])
    func secondPutReleasesTheFirstsFile(withAFailingPut: Bool) throws {
        let (store, root) = try openStore()
        defer { store.close() }
        // A put that fails makes the batch run again, each put in a savepoint.
        let failing: [(JSONValue, MethodContext)] =
            withAFailingPut ? [(["collection": "c", "key": "bad"] as JSONValue, ctx(store))] : []
        let batch = PutBatch.run(
            store, [(put("x", root + "/a"), ctx(store)), (put("x", root + "/b"), ctx(store))] + failing)
        #expect(batch.results.prefix(2).allSatisfy { if case .success = $0.1 { true } else { false } })
        #expect(try queued(store) == [root + "/a"], "a's last edge went with the second put")
        #expect(try registered(store, root) == [root + "/b"])
    }

    @Test("X holding c, put with a, then with c again, in one batch: a is queued and c stays held")
    func backToTheFirstFile() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        _ = PutBatch.run(store, [(put("x", root + "/c"), ctx(store))])
        _ = PutBatch.run(store, [(put("x", root + "/a"), ctx(store)), (put("x", root + "/c"), ctx(store))])
        #expect(try queued(store) == [root + "/a"])
        #expect(try registered(store, root) == [root + "/c"])
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: root + "/c"))
        #expect(!FileManager.default.fileExists(atPath: root + "/a"))
    }
}
