// Confinement with a managed root nested in another (assetd.toml(5), [files] roots; assetd(8),
// The unlink queue): the inner root lies in folders the outer root's clients write, so it may
// be swapped for a symlink. A path below it is resolved from the outer root, and a symlink
// there is refused like any other.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct NestedRootTests {
    /// A store whose roots are the fixture's root and `root/inner`.
    static func nested() throws -> Fixture {
        try Fixture { $0.roots.append($0.roots[0] + "/inner") }
    }

    @Test("a nested root replaced by a symlink to a folder outside every root is refused as unsafe_path")
    func registerThroughSymlinkedInnerRoot() throws {
        let f = try Self.nested()
        let victim = f.dir + "/outside/victim.bin"
        try writeFile(victim, size: 21)
        try makeSymlink(at: f.root + "/inner", to: f.dir + "/outside")

        let refused = expectCode(.unsafePath) { try f.hold(f.root + "/inner/victim.bin", key: "k") }
        #expect(refused != nil, "registered a path through the symlinked inner root")
        // Had it been accepted, its holder's delete must still leave the outside file alone.
        if try f.exists(ref("c", "k")) {
            try f.delete(ref("c", "k"))
            _ = try f.store.sweep()
        }
        #expect(onDisk(victim)?.size == 21)
    }

    @Test("a file under a nested root swapped for a symlink after commit is kept and retried, the link leading to it")
    func innerRootSwappedAfterCommit() throws {
        let f = try Self.nested()
        let path = try f.makeFile("inner/dir/x.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        try move(f.root + "/inner", f.root + "/inner.moved")
        try makeSymlink(at: f.root + "/inner", to: f.root + "/inner.moved")

        // Like an outer root replaced: the row stays, failing, until the root is back.
        let sweep = try f.store.sweep(retryFailed: true)
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep)")
        #expect(sweep.failed.map(\.path) == [path] && sweep.pending == 1, "\(sweep)")
        #expect(f.exists(f.root + "/inner.moved/dir/x.bin"))

        #expect(unlink(f.root + "/inner") == 0)
        try move(f.root + "/inner.moved", f.root + "/inner")
        let again = try f.store.sweep(retryFailed: true)
        #expect(again.unlinked == [path] && !f.exists(path), "\(again)")
    }

    @Test("a nested root renamed away keeps its queued files' rows; they go once it is back")
    func innerRootRenamedAway() throws {
        let f = try Self.nested()
        let path = try f.makeFile("inner/media/b.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try move(f.root + "/inner", f.root + "/inner.moving")
        let sweep = try f.store.sweep(retryFailed: true)
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep)")
        #expect(sweep.failed.map(\.path) == [path] && sweep.pending == 1, "\(sweep)")

        try move(f.root + "/inner.moving", f.root + "/inner")
        let again = try f.store.sweep(retryFailed: true)
        #expect(again.unlinked == [path] && !f.exists(path), "the file came back unregistered: \(again)")
    }

    @Test("verify with repair leaves the files of a nested root renamed away alone and reports the root")
    func verifyRepairUnderInnerRootRenamedAway() throws {
        let f = try Self.nested()
        let path = try f.makeFile("inner/media/a.bin")
        try f.hold(path, key: "k")
        try move(f.root + "/inner", f.root + "/inner.moving")
        let r = try f.verify(repair: true)
        #expect(r.of("missing_file").isEmpty, "\(r.json)")
        #expect(r.of("root_missing").map(\.subject) == [["path": .string(f.root + "/inner")]], "\(r.json)")
        #expect(try f.count(EdgeFilter(source: ref("c", "k"))) == 1)
    }

    @Test("a holder put again while its nested root is away keeps its file's identity; the file goes once back")
    func reputUnderInnerRootRenamedAway() throws {
        let f = try Self.nested()
        let path = try f.makeFile("inner/media/a.bin")
        try f.hold(path, key: "k")
        try move(f.root + "/inner", f.root + "/inner.moving")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        _ = try f.store.sweep(retryFailed: true)
        try move(f.root + "/inner.moving", f.root + "/inner")
        let again = try f.store.sweep(retryFailed: true)
        #expect(again.unlinked == [path] && !f.exists(path), "\(again)")
    }

    @Test("verify --delete-orphans does not walk a nested root that is a symlink to outside every root")
    func orphansThroughSymlinkedInnerRoot() throws {
        let f = try Self.nested()
        let outside = f.dir + "/outside/old.bin"
        try writeFile(outside, size: 5)
        try makeSymlink(at: f.root + "/inner", to: f.dir + "/outside")
        let lost = try f.makeFile("lost.bin")

        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.of("orphan").map { $0.subject["path"] } == [.string(lost)], "\(r.json)")
        #expect(onDisk(outside)?.size == 5)
        #expect(!f.exists(lost))
    }

    @Test("a nested root that is a real folder keeps working: its files are registered, unlinked and walked")
    func realInnerRoot() throws {
        let f = try Self.nested()
        let path = try f.makeFile("inner/a/x.bin")
        try f.hold(path, key: "k")
        let orphan = try f.makeFile("inner/b/lost.bin")
        let r = try f.verify(orphans: true)
        #expect(r.of("orphan").map { $0.subject["path"] } == [.string(orphan)])
        let removed = try f.verify(orphans: true, deleteOrphans: true)
        #expect(removed.of("orphan").map(\.repaired) == [true])
        #expect(!f.exists(orphan) && f.exists(path))
        try f.delete(ref("c", "k"))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }
}
