// I3 with hard links: a file below a root may be another name of a file outside every root.
// Unlinking the managed name removes only that name; the outside name and its contents stay.

import Foundation
import Glibc
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct OutsideHardLinkTests {
    @Test("a managed name hard-linked to a file outside the roots: its unlink leaves the outside file whole")
    func hardLinkToOutside() throws {
        let f = try Fixture()
        let outside = f.dir + "/outside/keep.bin"
        try writeFile(outside, size: 17)
        let path = f.root + "/a/link.bin"
        try makeParent(path)
        guard link(outside, path) == 0 else { throw SetupFailed(what: "link: errno \(errno)") }
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
        let kept = try #require(onDisk(outside))
        #expect(kept.isRegular && kept.size == 17)
    }
}
