// Confinement at unlink time (assetd(8), DATA MODEL, The unlink queue): between commit and sweep
// the world may change. A symlink swapped in, a replaced inode, a directory, or a root dropped from
// the configuration means nothing is removed and the skip is reported; a vanished file is done.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

/// Which component of a queued path is swapped for a symlink after the commit.
struct Swap: Sendable, CustomStringConvertible {
    /// The queued file, relative to the root.
    var file: String
    /// The component (a prefix of `file`) renamed away and replaced by a symlink.
    var swapped: String
    var description: String { "\(swapped) in \(file)" }
}

let swaps: [Swap] = [
    Swap(file: "dir/x.bin", swapped: "dir"),
    Swap(file: "a/b/x.bin", swapped: "a"),
    Swap(file: "a/b/x.bin", swapped: "a/b"),
    Swap(file: "x.bin", swapped: "x.bin"),
    Swap(file: "dir/x.bin", swapped: "dir/x.bin"),
]

@Suite struct UnlinkSafetyTests {
    @Test(
        "a symlink swapped into the path after commit leads nowhere: nothing outside the root is removed",
        arguments: swaps)
    func symlinkSwappedIn(swap: Swap) throws {
        let f = try Fixture()
        let path = try f.makeFile(swap.file)
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        // Outside the root, a tree where following the symlink would find a file of the same name.
        let outside = f.dir + "/outside"
        let canary = outside + "/" + swap.file
        try writeFile(canary, size: 33)
        let swappedPath = f.root + "/" + swap.swapped
        try move(swappedPath, swappedPath + ".moved")
        try makeSymlink(at: swappedPath, to: outside + "/" + swap.swapped)

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(sweep.skipped.map(\.reason) == [.unsafePath])
        #expect(sweep.pending == 0)
        #expect(onDisk(canary)?.size == 33)
        #expect(onDisk(swappedPath)?.isSymlink == true)
        #expect(onDisk(swappedPath + ".moved") != nil)
        let counters = try f.store.counters()
        #expect(counters["skipped_unsafe_path"] == 1)
        #expect(counters["unlinked"] == 0)
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a symlinked folder pointing inside the root is not followed either")
    func symlinkInsideRoot() throws {
        let f = try Fixture()
        let path = try f.makeFile("dir/x.bin")
        let decoy = try f.makeFile("other/x.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try move(f.root + "/dir", f.root + "/dir.moved")
        try makeSymlink(at: f.root + "/dir", to: f.root + "/other")

        let sweep = try f.store.sweep()
        #expect(sweep.skipped.map(\.reason) == [.unsafePath])
        #expect(f.exists(decoy))
        #expect(f.exists(f.root + "/dir.moved/x.bin"))
    }

    @Test("a symlink leading to the very file queued is not followed: the file is kept")
    func symlinkToSameFile() throws {
        try expectLinkToQueuedFileRefused(try Fixture(), folder: "dir", file: "x.bin")
    }

    @Test("a file replaced by a new inode after commit is kept and reported as identity_changed")
    func replacedByNewInode() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 10)
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try replaceWithNewInode(path, size: 44)

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(sweep.skipped.map(\.reason) == [.identityChanged])
        #expect(onDisk(path)?.size == 44)
        #expect(try f.store.counters()["skipped_identity_changed"] == 1)
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a directory created at the queued path is kept, contents and all", arguments: [false, true])
    func directoryAtPath(withContents: Bool) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        if withContents { try writeFile(path + "/inside.bin") }

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.reason) == [.identityChanged])
        #expect(onDisk(path)?.isDirectory == true)
        if withContents { #expect(f.exists(path + "/inside.bin")) }
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a fifo created at the queued path is kept")
    func fifoAtPath() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try FileManager.default.removeItem(atPath: path)
        try makeFifo(at: path)
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.reason) == [.identityChanged])
        #expect(f.exists(path))
    }

    @Test("a queued file that already vanished counts as unlinked", arguments: [false, true])
    func vanished(folderToo: Bool) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/b/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try FileManager.default.removeItem(atPath: folderToo ? f.root + "/a" : path)

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path])
        #expect(sweep.failed.isEmpty)
        #expect(sweep.skipped.isEmpty)
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.counters()["unlinked"] == 1)
    }

    @Test("a file referenced before it existed and created after its delete was queued is kept")
    func missingWhenQueuedThenCreated() throws {
        let f = try Fixture()
        let path = f.root + "/later/one.bin"
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        try f.makeFile("later/one.bin")

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.reason) == [.identityChanged])
        #expect(f.exists(path))
    }

    @Test("a file referenced before it existed and created before its holder went is unlinked")
    func missingWhenRegisteredThenCreated() throws {
        let f = try Fixture()
        let path = f.root + "/later/one.bin"
        try f.hold(path, key: "k")
        try f.makeFile("later/one.bin")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a queued file whose root was removed from the configuration is kept and retried; re-added, it goes")
    func rootRemovedFromConfiguration() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))

        let other = f.dir + "/other-root"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        f.configuration.roots = [other]
        try f.reopen(drain: false)

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty)
        #expect(sweep.failed.map(\.path) == [path])
        let parked = "not under a configured root (parked until assetd starts again)"
        #expect(sweep.failed.map(\.error) == [parked])
        #expect(f.exists(path))
        #expect(try f.store.counters()["skipped_unsafe_path", default: 0] == 0)
        let row = try f.store.pending()
        #expect(row.map(\.lastError) == [parked] && row.map(\.nextAttempt) == [Store.parkedUntil])

        // Parked: an admin's sweep (retrying failed rows) neither counts nor rewrites it.
        #expect(try f.store.sweep(retryFailed: true).failed.isEmpty)
        #expect(try f.store.pending().map(\.attempts) == [1])
        #expect(try f.store.counters()["unlink_failures", default: 0] == 1)

        // The root configured again: the open brings the row back and its drain unlinks it.
        f.configuration.roots = [f.root, other]
        try f.reopen()
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a lease-deferred row is due again after an open without the drain")
    func leaseDeferralEndsWithoutDrain() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        _ = try f.store.leases.acquire(objects: [], files: [path], ttl: 3600)
        try f.delete(ref("c", "k"))
        #expect(try f.store.sweep().deferred.map(\.reason) == [.leased])
        try f.reopen(drain: false)  // the lease died with the store
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("the drain at open keeps a file whose root is no longer configured, and its row")
    func rootRemovedBeforeDrain() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        f.configuration.roots = [f.dir + "/other-root"]
        try FileManager.default.createDirectory(atPath: f.dir + "/other-root", withIntermediateDirectories: true)
        try f.reopen(drain: true)
        #expect(f.exists(path))
        #expect(try f.store.counters()["unlink_failures"] == 1)
        #expect(try f.store.pending().map(\.path) == [path])

        // Re-added, and the retry due: the next open's drain removes it.
        f.configuration.roots = [f.root]
        f.clock.advance(2)
        try f.reopen(drain: true)
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
    }
}

/// Queues `folder/file` (relative to the root), then moves `folder` aside and leaves a
/// symlink to it in its place, and sweeps. Following the link would reach the recorded inode
/// itself, so only refusing the link keeps the file.
func expectLinkToQueuedFileRefused(_ f: Fixture, folder: String, file: String) throws {
    let path = try f.makeFile(folder + "/" + file)
    try f.hold(path, key: "k")
    #expect(try f.delete(ref("c", "k")).filesQueued == [path])
    try move(f.root + "/" + folder, f.root + "/" + folder + ".moved")
    try makeSymlink(at: f.root + "/" + folder, to: f.root + "/" + folder + ".moved")

    let sweep = try f.store.sweep()
    #expect(sweep.unlinked.isEmpty)
    #expect(sweep.skipped.map(\.reason) == [.unsafePath])
    #expect(f.exists(f.root + "/" + folder + ".moved/" + file))
}
