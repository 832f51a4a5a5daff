// `sweep` from a non-admin runs only the unlinks that are due; retrying failed rows at once
// (each retry takes the write lock) is an admin's: a client calling sweep in a loop must not
// hold the writer over and over on rows that keep failing.

@testable import AssetDaemon
import AssetService
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct SweepRetryTests {
    private let folders = TempFolders(prefix: "assetd-sweepretry-")

    @Test("a non-admin's sweep leaves a failed row to its next attempt; an admin's retries it at once")
    func retryIsAdmins() throws {
        let dir = try folders.make()
        let root = dir + "/root"
        for d in [root] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        let clock = TestClock()
        var c = StoreConfiguration(roots: [root])
        c.clock = { clock.now }
        var store = try Store(path: dir + "/db.sqlite", configuration: c)
        let file = root + "/f.bin"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        try store.write { tx in try tx.put(ObjectRef("c", "k"), value: ["file": .string(file)]) }
        try store.write { tx in try tx.delete(ObjectRef("c", "k")) }
        // Recorded on a device never seen (its disk not mounted, the file at the path another
        // filesystem's): the row fails and waits for its next attempt.
        try store.pool.write { db in try db.execute(sql: "UPDATE unlink_queue SET device = device + 1000000") }
        store.close()
        store = try Store(path: dir + "/db.sqlite", configuration: c)
        defer { store.close() }
        #expect(try store.pending().map(\.attempts) == [1])

        func sweep(admin: Bool) throws -> JSONValue {
            let ctx = MethodContext(
                store: store, caller: Caller(uid: admin ? 0 : 1000, userName: admin ? "root" : "u", isAdmin: admin),
                enforceOwnership: false)
            return try MethodTable.call("sweep", [:], ctx).get().result
        }
        #expect(try sweep(admin: false)["failed"] == 0)
        #expect(try store.pending().map(\.attempts) == [1], "not retried before its time")
        #expect(try sweep(admin: true)["failed"] == 1)
        #expect(try store.pending().map(\.attempts) == [2])
        #expect(FileManager.default.fileExists(atPath: file))
    }
}
