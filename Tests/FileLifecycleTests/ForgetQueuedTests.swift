// Dropping queued unlinks by hand (pending.forget): the row goes, the file stays, the count
// is kept; paths are normalised and compared as bytes.

import Foundation
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct ForgetQueuedTests {
    @Test("a row that keeps failing is forgotten: no retry, the file stays, counted once")
    func failingRowForgotten() throws {
        let f = try Fixture()
        let path = try f.makeFile("stuck/one.bin")
        let other = try f.makeFile("stuck/two.bin")
        try f.hold(path, key: "one")
        try f.hold(other, key: "two")
        let obstacle = try UnlinkObstacle(path, in: f)
        try f.delete(ref("c", "one"), ref("c", "two"))
        #expect(try f.store.sweep().failed.map(\.path) == [path])

        let spelled = path.replacingOccurrences(of: "/stuck/", with: "/stuck/./")
        #expect(try f.store.forgetQueued([spelled, f.root + "/never/queued.bin"]) == [path])
        obstacle.remove()
        f.clock.advance(Store.maximumRetryDelay)
        #expect(try f.store.sweep(retryFailed: true).unlinked.isEmpty)
        #expect(try f.store.pending().isEmpty)
        #expect(f.exists(path) && !f.exists(other))
        #expect(try f.store.counters()["forgotten"] == 1)
        #expect(try f.store.forgetQueued([path]).isEmpty)
        #expect(throws: StoreError.self) { try f.store.forgetQueued(["relative/path"]) }
    }
}
