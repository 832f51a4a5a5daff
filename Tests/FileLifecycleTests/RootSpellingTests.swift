// Managed roots as configured (assetd.toml(5), [files] roots; assetd(8), Files): a root is
// normalised like any path, so a trailing slash or a "." changes nothing, a ".." or a relative root
// is refused, and a path is confined to the outermost root it lies below, on a "/" boundary.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct RootSpellingTests {
    @Test(
        "a root given with a trailing slash, repeated slashes and . is the same root: files below it are registered, unlinked and walked"
    )
    func oddlySpelledRoot() throws {
        let f = try Fixture { $0.roots = [$0.roots[0] + "//./"] }
        #expect(f.store.roots.paths == [f.root])
        let path = try f.makeFile("a/x.bin")
        try f.hold(f.root + "/./a//x.bin", key: "k")
        #expect(try f.store.read { try $0.file(path) } != nil)
        let lost = try f.makeFile("b/lost.bin")
        #expect(try f.verify(orphans: true).of("orphan").map { $0.subject["path"] } == [.string(lost)])
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test(
        "a root with a .. segment, a relative root and every spelling of / are refused",
        arguments: ["/srv/cache/../etc", "/srv/..", "srv/cache", "", "/", "//", "/./", "file:///srv/cache/%2E%2E/etc"])
    func refusedRoots(root: String) {
        #expect(expectCode(.invalidPath) { try ManagedRoots(["/srv/ok", root]) } != nil)
    }

    @Test("one root in two spellings is one root; a path is confined to the outermost root, on a / boundary")
    func matching() throws {
        let roots = try ManagedRoots(["/srv/c/", "/srv/c", "/srv/c/inner", "/srv/other"])
        #expect(roots.paths == ["/srv/c/inner", "/srv/other", "/srv/c"])
        #expect(roots.root(of: "/srv/c/inner/x") == "/srv/c")
        #expect(roots.root(of: "/srv/c/x") == "/srv/c")
        #expect(roots.root(of: "/srv/other/x") == "/srv/other")
        #expect(roots.root(of: "/srv/cx/y") == nil)
        #expect(roots.root(of: "/srv/c") == nil)
        #expect(roots.root(of: "/srv") == nil)
        #expect(expectCode(.pathOutsideRoots) { try roots.accept("/srv/c-other/x") } != nil)
        #expect(try roots.accept("file:///srv/c/inner/a%20b").path == "/srv/c/inner/a b")
    }

    @Test(
        "a reference with a NUL byte, %00 or a percent escape that is not UTF-8 is invalid_path: nothing registered, no lease",
        arguments: ["/a\u{0}/x.bin", "/a/x.bin\u{0}", "/a%00/x.bin", "/a/%FF.bin", "/a/%C3.bin"])
    func refusedBytes(suffix: String) throws {
        let f = try Fixture()
        let reference = suffix.contains("%") ? "file://" + f.root + suffix : f.root + suffix
        #expect(expectCode(.invalidPath) { try f.hold(reference, key: "k") } != nil)
        #expect(try !f.exists(ref("c", "k")))
        #expect(try f.store.read { try $0.objectCount() } == 0)
        #expect(
            expectCode(.invalidPath) { try f.store.leases.acquire(objects: [], files: [reference], ttl: 60) } != nil)
        #expect(f.store.leases.active().isEmpty)
    }
}
