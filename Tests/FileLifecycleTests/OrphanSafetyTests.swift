// verify --delete-orphans unlinks as root: a file it takes for an orphan must not be one the
// store still holds under another name, nor one a commit not yet on disk let go of.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct OrphanSafetyTests {
    func deleteOrphans(_ f: Fixture, repair: Bool = false) throws -> VerifyReport {
        f.tagRoots()
        var o = VerifyOptions()
        o.orphans = true
        o.deleteOrphans = true
        o.repair = repair
        return try f.store.verify(o)
    }

    @Test("a registered file whose folder was renamed is kept by delete-orphans, after verify's repair too")
    func movedFolderKept() throws {
        for repair in [false, true] {
            let f = try Fixture()
            let path = try f.makeFile("d/f.bin")
            try f.put([(ref("c", "k"), ["file": .string(path)])])
            #expect(rename(f.root + "/d", f.root + "/e") == 0)
            let r = try deleteOrphans(f, repair: repair)
            #expect(f.exists(f.root + "/e/f.bin"), "repair \(repair): unlinked as an orphan")
            let orphans = r.problems.filter { $0.kind == "orphan" }
            #expect(orphans.count == 1 && orphans.allSatisfy { !$0.repaired && $0.message.contains("inode") })
            #expect(r.problems.contains { $0.kind == "missing_file" && $0.repaired == repair })
        }
    }

    @Test("delete-orphans unlinks a file a commit let go of only once that commit is on disk")
    func orphanAfterDurableCommit() throws {
        let f = try Fixture { $0.durability = .normal }
        let path = try f.makeFile("a/watched.bin")
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: [:])
            try tx.addEdge(name: "watch", source: ref("c", "k"), destination: .file(path), rules: [])
        }
        let commit = try f.delete(ref("c", "k")).commit  // the row goes, the file stays: no rule deletes it
        #expect(f.store.durableCommit < commit)
        let store: Store = f.store
        let durableThen = Mutex<Int64?>(nil)
        store.state.withLock { $0.orphanUnlinkDecided = { _ in durableThen.withLock { $0 = store.durableCommit } } }
        let r = try deleteOrphans(f)
        #expect(r.problems.contains { $0.kind == "orphan" && $0.repaired })
        #expect(!f.exists(path))
        #expect(try #require(durableThen.withLock { $0 }) >= commit, "unlinked before the commit was synced")
    }
}
