// I3 against a folder moved while a sweep batch runs: each sweep thread keeps the folder it
// last opened, and a folder moved out of the root since must not be unlinked in. The move
// happens through the sweep's internal hook, just before the second file's unlink.

import Foundation
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct MovedFolderTests {
    /// Two files in `folder`, each held by an object, both released: queued, in that order.
    func queueTwo(_ f: Fixture, in folder: String) throws -> (a: String, b: String) {
        let a = try f.makeFile("\(folder)/a.bin")
        let b = try f.makeFile("\(folder)/b.bin")
        try f.hold(a, key: "a")
        try f.hold(b, key: "b")
        try f.delete(ref("c", "a"), ref("c", "b"))
        return (a, b)
    }

    @Test("a folder moved out of the root during a sweep batch: its remaining file is not removed there")
    func folderMovedOutMidBatch() throws {
        let f = try Fixture()
        let (a, _) = try queueTwo(f, in: "d")
        let root = f.root
        let outside = f.dir + "/outside-d"
        let report = try f.store.sweep(retryFailed: false, batch: 1000, threads: 1) { path in
            if path.hasSuffix("/b.bin") { _ = rename(root + "/d", outside) }
        }
        #expect(!f.exists(a))
        #expect(f.exists(outside + "/b.bin"), "a file was removed from a folder outside the root")
        #expect(report.unlinked.count == 2, "b is gone from its path: done, as any vanished file")
        #expect(report.pending == 0)
    }

    @Test("a folder replaced by a symlink during a sweep batch: its remaining file is kept as unsafe_path")
    func folderSwappedForSymlinkMidBatch() throws {
        let f = try Fixture()
        let (_, b) = try queueTwo(f, in: "d")
        let root = f.root
        let moved = f.dir + "/outside-d"
        let report = try f.store.sweep(retryFailed: false, batch: 1000, threads: 1) { path in
            if path.hasSuffix("/b.bin") {
                _ = rename(root + "/d", moved)
                _ = symlink(moved, root + "/d")
            }
        }
        #expect(f.exists(moved + "/b.bin"))
        #expect(report.skipped.map(\.path) == [b])
        #expect(report.skipped.map(\.reason) == [.unsafePath])
    }

    @Test("a folder's parent replaced by a symlink during a sweep batch: the folder's remaining file is kept")
    func parentSwappedForSymlinkMidBatch() throws {
        let f = try Fixture()
        let (a, b) = try queueTwo(f, in: "p/d")
        let root = f.root
        let moved = f.dir + "/outside-p"
        // The folder's own path still names the same folder, through the symlink: only where
        // the held folder really is now tells that it left the root.
        let report = try f.store.sweep(retryFailed: false, batch: 1000, threads: 1) { path in
            if path.hasSuffix("/b.bin") {
                _ = rename(root + "/p", moved)
                _ = symlink(moved, root + "/p")
            }
        }
        #expect(!f.exists(a))
        #expect(f.exists(moved + "/d/b.bin"), "a file was removed through a symlink, outside the root")
        #expect(report.skipped.map(\.path) == [b])
        #expect(report.skipped.map(\.reason) == [.unsafePath])
    }
}
