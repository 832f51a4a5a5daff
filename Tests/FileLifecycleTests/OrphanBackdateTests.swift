// The orphan grace goes by the later of a file's mtime and ctime: tar, rsync -t and cp -p
// give a file they have just written an old mtime, and a verify --delete-orphans between the
// unpack and the put must not take it for an old orphan.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite struct OrphanBackdateTests {
    @Test("a new file with its mtime set two days back is no orphan until the grace has passed since its ctime")
    func backdatedMtime() throws {
        // Real time, moved on when told: the file's ctime is the kernel's, not the fixture's.
        let moved = TestClock()
        let start = moved.now
        let f = try Fixture { $0.clock = { Date().timeIntervalSince1970 + (moved.now - start) } }
        let unpacked = try f.makeFile("unpacked/new.bin")
        try setModificationTime(unpacked, Date().timeIntervalSince1970 - 2 * 86_400)

        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.of("orphan").isEmpty, "\(r.problems)")
        #expect(f.exists(unpacked))

        moved.advance(f.configuration.orphanGrace + 10)
        #expect(try f.verify(orphans: true).of("orphan").map { $0.subject["path"] } == [.string(unpacked)])
    }
}
