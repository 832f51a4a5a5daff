// A restore's hold on the copy's queued unlinks (assetctl(1), restore) ends only with an
// admin's `sweep --release-restore`: the shipped cron's plain sweep as root leaves it, a
// non-admin cannot end it, and while it lasts a policy run deletes nothing (an object of the
// copy may hold a file a put the restore lost took again).

@testable import AssetDaemon
import AssetService
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct RestoreHoldSweepTests {
    private let folders = TempFolders(prefix: "assetd-restorehold-")

    @Test("only an admin's sweep with release_restore ends the hold; policy runs wait for it")
    func releaseIsExplicit() throws {
        let dir = try folders.make()
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var c = StoreConfiguration(roots: [root])
        var p = PolicyConfiguration()
        p.maxBytes = 0
        p.minAge = 0  // old enough to evict at once: only the hold keeps it
        c.policy = p
        let path = dir + "/db.sqlite"
        let store = try Store(path: path, configuration: c)
        defer { store.close() }
        let queued = root + "/queued.bin"
        let kept = root + "/kept.bin"
        for f in [queued, kept] { #expect(FileManager.default.createFile(atPath: f, contents: Data([1]))) }
        try store.write { tx in try tx.put(ObjectRef("c", "q"), value: ["file": .string(queued)]) }
        try store.write { tx in try tx.delete(ObjectRef("c", "q")) }
        try store.write { tx in try tx.put(ObjectRef("c", "k"), value: ["file": .string(kept)]) }
        // Made live as a copy put in place would be (no mark: force).
        #expect(try store.restore(configuredSource: path, force: true).held == 1)
        // Queued after the restore: a client's delete of an object whose file a lost put took.
        let taken = root + "/taken.bin"
        #expect(FileManager.default.createFile(atPath: taken, contents: Data([1])))
        try store.write { tx in try tx.put(ObjectRef("c", "t"), value: ["file": .string(taken)]) }
        try store.write { tx in try tx.delete(ObjectRef("c", "t")) }

        func sweep(admin: Bool, release: Bool) throws -> JSONValue {
            let ctx = MethodContext(
                store: store, caller: Caller(uid: admin ? 0 : 1000, userName: admin ? "root" : "u", isAdmin: admin),
                enforceOwnership: false)
            return try MethodTable.call("sweep", release ? ["release_restore": true] : [:], ctx).get().result
        }
        #expect(throws: (any Error).self) { try sweep(admin: false, release: true) }
        #expect(FileManager.default.fileExists(atPath: queued), "a non-admin ended the hold")
        let plain = try sweep(admin: true, release: false)  // the cron's, as root
        #expect(plain["unlinked"] == 0 && plain["held"] == 2, "\(plain)")
        #expect(FileManager.default.fileExists(atPath: queued), "a plain admin sweep ended the hold")
        #expect(FileManager.default.fileExists(atPath: taken), "a row queued after the restore was run")

        let paused = try store.enforce()
        #expect(paused.heldByRestore && paused.objects.isEmpty, "a policy run deleted while the hold lasts")
        #expect(try store.read { r in try r.get(ObjectRef("c", "k")) } != nil)

        let released = try sweep(admin: true, release: true)
        #expect(released["unlinked"] == 2 && released["held"] == 0, "\(released)")
        #expect(!FileManager.default.fileExists(atPath: queued) && !FileManager.default.fileExists(atPath: taken))
        let after = try store.enforce()
        #expect(!after.heldByRestore, "policy runs go on once the hold is released")
        #expect(after.objects.count == 1, "the run the hold paused deletes once it is released: \(after.objects)")
    }
}
