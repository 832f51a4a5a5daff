// S3-FIFO and objects as large as its small queue (a tenth of `max_bytes`), as assetd.toml(5)
// `order` describes: such an object is kept, in the main queue, when it was read since its put
// or when its key is in the ghost record; a new one never read goes first, and its key is
// remembered so that the next put of it stays. A media cache whose files are large against its
// budget must not lose the video just watched before the one nobody watched.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("S3-FIFO and large objects")
struct EvictionLargeObjectTests {
    /// Budget 2,000 bytes: the small queue holds 200, so every 700-byte object is large.
    private func fixture() throws -> Fixture {
        try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = 2000
            p.lowWater = 1
            p.minAge = 0
            p.order = .s3fifo
            $0.policy = p
        }
    }

    private func put(_ f: Fixture, _ key: String) throws {
        f.clock.advance(1)
        let path = try f.makeFile("\(key)-\(Int(f.clock.now))", size: 700)
        try f.put([(ref("v", key), ["file": .string(path)])])
    }

    private func mainQueueHolds(_ f: Fixture, _ key: String) throws -> Bool {
        try queue(f, key, collection: "v") == EvictionQueues.main
    }

    @Test("a large object read since its put stays, and the unread one after it goes")
    func readSincePutStays() throws {
        let f = try fixture()
        try put(f, "watched")
        f.clock.advance(1)
        try f.store.touch(ref("v", "watched"))
        try f.store.flushAccesses()
        try put(f, "unwatched")
        try put(f, "new")  // 2,100 bytes: 100 over
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["unwatched"])
        #expect(plan.objects.first?.detail == "s3fifo: larger than the small queue, new and not read since its put")
        #expect(try mainQueueHolds(f, "watched"))
    }

    @Test("a large object evicted unread and put again is kept the second time")
    func secondPutStays() throws {
        let f = try fixture()
        for key in ["a", "b", "c"] { try put(f, key) }
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["a"])
        try put(f, "a")  // fetched again: its key is in the ghost record
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["b"])
        #expect(try mainQueueHolds(f, "a"))
        // The dry run of the same state plans the same.
        try put(f, "d")
        let dry = try f.store.enforce(dryRun: true)
        #expect(dry.objects.map(\.ref.key) == (try f.store.enforce()).objects.map(\.ref.key))
    }
}
