// verify --delete-orphans unlinks only under roots that carry assetd's CACHEDIR.TAG (on the
// root or on a root enclosing it), or with force; listing orphans needs no tag. A refused run
// changes nothing. path_outside_roots names the roots (assetd(8)).

import Foundation
import Glibc
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct OrphanConsentTests {
    /// verify that deletes orphans, with or without force.
    static func deleteOrphans(_ f: Fixture, force: Bool = false) throws -> VerifyReport {
        var o = VerifyOptions()
        o.orphans = true
        o.deleteOrphans = true
        o.force = force
        return try f.store.verify(o)
    }

    @Test("an untagged root: delete-orphans is refused naming the root and both ways on, and unlinks nothing")
    func untaggedRootRefused() throws {
        let f = try Fixture()
        let orphan = try f.makeFile("someone-elses.bin")
        let refused = try #require(expectCode(.untaggedRoot) { try Self.deleteOrphans(f) })
        #expect(refused.message.contains(f.root), "\(refused.message)")
        #expect(refused.message.contains("--force") && refused.message.contains("CACHEDIR.TAG"), "\(refused.message)")
        #expect(refused.detail?["root"] == .string(f.root))
        #expect(f.exists(orphan))
        var list = VerifyOptions()
        list.orphans = true
        #expect(
            try f.store.verify(list).of("orphan").map { $0.subject["path"] } == [.string(orphan)],
            "listing needs no tag")
        #expect(f.exists(orphan))
    }

    @Test("force deletes orphans under an untagged root")
    func forceDeletes() throws {
        let f = try Fixture()
        let orphan = try f.makeFile("lost.bin")
        #expect(try Self.deleteOrphans(f, force: true).of("orphan").map(\.repaired) == [true])
        #expect(!f.exists(orphan))
    }

    @Test("assetd's tag is consent, and the tag itself is never an orphan")
    func assetdTagIsConsent() throws {
        let f = try Fixture()
        #expect(CacheDirectoryTag.write(in: f.root) == nil)
        let text = try String(contentsOfFile: f.root + "/CACHEDIR.TAG", encoding: .utf8)
        #expect(
            text.hasPrefix(
                "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by assetd.\n"
            ))
        var list = VerifyOptions()
        list.orphans = true
        #expect(try f.store.verify(list).found == 0, "the tag is not reported")
        let orphan = try f.makeFile("a/lost.bin")
        let r = try Self.deleteOrphans(f)
        #expect(r.of("orphan").map { $0.subject["path"] } == [.string(orphan)])
        #expect(!f.exists(orphan) && f.exists(f.root + "/CACHEDIR.TAG"))
    }

    /// Tags that are not assetd's: another program's, a signature-less file, a symlink to a good tag.
    static let foreignTags: [(String, String)] = [
        (
            "another program's tag",
            "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n"
        ),
        (
            "assetd's line without the signature first",
            "# This file is a cache directory tag created by assetd.\nSignature: 8a477f597d28d172789f06886806bc55\n"
        ),
        ("a symlink to assetd's tag", ""),
    ]

    @Test("a tag that is not assetd's is no consent", arguments: foreignTags)
    func foreignTagRefused(_ label: String, _ text: String) throws {
        let f = try Fixture()
        if text.isEmpty {
            #expect(CacheDirectoryTag.write(in: f.dir) == nil)
            #expect(symlink(f.dir + "/CACHEDIR.TAG", f.root + "/CACHEDIR.TAG") == 0)
        } else {
            try text.write(toFile: f.root + "/CACHEDIR.TAG", atomically: false, encoding: .utf8)
        }
        let orphan = try f.makeFile("lost.bin")
        #expect(expectCode(.untaggedRoot) { try Self.deleteOrphans(f) } != nil, "\(label)")
        #expect(f.exists(orphan))
    }

    @Test(
        "a tag another user than root, this process's or the database's owns, or one with another link, is no consent",
        .enabled(if: getuid() == 0, "needs root to chown the tag"))
    func forgedTagRefused() throws {
        let f = try Fixture()
        #expect(CacheDirectoryTag.write(in: f.root) == nil)
        let tag = f.root + "/CACHEDIR.TAG"
        let orphan = try f.makeFile("lost.bin")
        #expect(chown(tag, 65534, 65534) == 0)
        #expect(expectCode(.untaggedRoot) { try Self.deleteOrphans(f) } != nil, "another user's tag")
        #expect(chown(tag, 0, 0) == 0)
        #expect(link(tag, f.dir + "/tag-link") == 0)
        #expect(expectCode(.untaggedRoot) { try Self.deleteOrphans(f) } != nil, "a tag with another link")
        #expect(f.exists(orphan))
        #expect(unlink(f.dir + "/tag-link") == 0)
        // The database's owner's tag: the user assetd runs as, to an admin's assetctl --db as root.
        #expect(chown(tag, 65534, 65534) == 0 && chown(f.dbPath, 65534, 65534) == 0)
        #expect(try Self.deleteOrphans(f).repaired == 1)
        #expect(!f.exists(orphan))
    }

    @Test(
        "a nested root is covered by its outer root's tag; a tagged nested root does not cover its untagged outer root")
    func nestedRoots() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "/inner") }
        try FileManager.default.createDirectory(atPath: f.root + "/inner", withIntermediateDirectories: true)
        let inner = try f.makeFile("inner/lost.bin"), outer = try f.makeFile("lost.bin")
        #expect(CacheDirectoryTag.write(in: f.root + "/inner") == nil)
        let refused = try #require(expectCode(.untaggedRoot) { try Self.deleteOrphans(f) })
        #expect(refused.detail?["root"] == .string(f.root), "\(refused.message)")
        #expect(f.exists(inner) && f.exists(outer))
        #expect(unlink(f.root + "/inner/CACHEDIR.TAG") == 0)
        #expect(CacheDirectoryTag.write(in: f.root) == nil)
        #expect(try Self.deleteOrphans(f).repaired == 2)
        #expect(!f.exists(inner) && !f.exists(outer))
    }

    @Test("path_outside_roots names the configured roots")
    func outsideNamesRoots() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "-second") }
        let e = try #require(expectCode(.pathOutsideRoots) { try f.hold(f.dir + "/elsewhere/movie.mp4", key: "k") })
        #expect(
            e.message == "\(f.dir)/elsewhere/movie.mp4 is not under a managed root (roots: \(f.root), \(f.root)-second)"
        )
    }
}
