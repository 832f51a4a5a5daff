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

    @Test("a file under a nested root swapped for a symlink after commit is kept, even when the link leads to it")
    func innerRootSwappedAfterCommit() throws {
        try expectLinkToQueuedFileRefused(try Self.nested(), folder: "inner", file: "dir/x.bin")
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
