// S3-FIFO and objects as large as its small queue (5% of `max_bytes`), as assetd.toml(5)
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
    /// Budget 2,000 bytes: the small queue holds 100, so every 700-byte object is large; the
    /// ghost record holds 1,000 bytes of keys.
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

    private func put(_ f: Fixture, _ key: String, size: Int = 700) throws {
        f.clock.advance(1)
        let path = try f.makeFile("\(key)-\(Int(f.clock.now))", size: size)
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

    @Test("a key counts as the small queue's bytes in the ghost record, so a huge object comes back")
    func hugeObjectKeyIsRemembered() throws {
        // 1,200 bytes: more than the whole ghost record (1,000). Counted whole, its key would
        // be dropped as soon as written, and the object never kept however often put again.
        let f = try fixture()
        try put(f, "huge", size: 1200)
        try put(f, "b")
        try put(f, "c", size: 200)  // 2,100 bytes: 100 over
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["huge"])
        let ghost = try f.store.read { r in
            try Row.fetchAll(r.db, sql: "SELECT size FROM evict_ghost").map { $0[0] as Int64 }
        }
        #expect(ghost == [100])
        try put(f, "huge", size: 1200)  // fetched again: 2,100 bytes
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["b"])
        #expect(try mainQueueHolds(f, "huge"))
    }
}
