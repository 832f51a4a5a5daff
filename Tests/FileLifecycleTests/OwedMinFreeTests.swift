// min_free counts queued bytes as freed (MinFreeStep), but a row that owes its file's look
// (TransientLookTests) may well keep its file: the look, taken late, takes nothing it cannot
// vouch for. Its row names no file (its identity NULL) and so no filesystem: not counted. A
// 4 MiB tmpfs is the root, as in MinFreeTests.

import AssetStoreTestSupport
import Glibc
import Testing
@testable import AssetStore

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct OwedMinFreeTests {
    let t = TransientLookTests()

    @Test("a queued file whose look is owed does not count as freed for min_free")
    func owedRowNotFreed() throws {
        let f = try Fixture()
        #expect(Tmpfs.mount(f.root, mib: 4))
        defer { Tmpfs.unmount(f.root) }
        let mib = 1 << 20
        var paths = [String]()
        for i in 0..<3 {
            paths.append(try f.makeFile("a/f\(i)", size: mib))
            // Claimed: its look at the delete is judged, so it may be owed.
            try f.store.write { tx in
                tx.fileReferenceCheck = FileReferenceCheck(uid: getuid(), owner: "u\(getuid())") { _ in nil }
                try tx.put(ref("c", "k\(i)"), value: ["file": .string(paths[i])])
            }
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        try t.failing(f.root, paths[0], EMFILE) { _ = try f.delete(ref("c", "k0")) }
        #expect(try f.store.pending().first?.lastError?.contains("EMFILE") == true)
        // 1 MiB free of 4, 2.5 wanted: f0's queued MiB may stay, so both other files must go.
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["k1", "k2"])
    }
}
