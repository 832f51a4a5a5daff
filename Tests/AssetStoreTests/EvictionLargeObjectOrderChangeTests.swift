// S3-FIFO's large-object rule after an order change: the access counts kept in the order's
// queue rows go when its state starts afresh (an order change, or a change and back) and are
// not counted at all under LRU, so "read since its put" is judged from `accessed` as well;
// otherwise an object read since its put would be evicted as unread, before the unread ones.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("S3-FIFO large objects after an order change")
struct EvictionLargeObjectOrderChangeTests {
    private func policy(_ order: EvictionOrder) -> PolicyConfiguration {
        var p = PolicyConfiguration()
        p.maxBytes = 2000
        p.lowWater = 1
        p.minAge = 0
        p.order = order
        return p
    }

    private func put(_ f: Fixture, _ key: String) throws {
        f.clock.advance(1)
        let path = try f.makeFile("\(key)-\(Int(f.clock.now))", size: 700)
        try f.put([(ref("v", key), ["file": .string(path)])])
    }

    private func read(_ f: Fixture, _ key: String) throws {
        f.clock.advance(1)
        try f.store.touch(ref("v", key))
        try f.store.flushAccesses()
    }

    @Test("an order change and back keeps that a large object was read since its put")
    func changeAndBack() throws {
        let f = try Fixture { $0.policy = policy(.s3fifo) }
        try put(f, "watched")
        try read(f, "watched")
        try put(f, "unwatched")
        try put(f, "new")
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["unwatched"])
        try read(f, "watched")
        f.store.policy = policy(.lru)
        f.store.policy = policy(.s3fifo)
        try put(f, "newer")  // 2,100 bytes: 100 over
        let plan = try f.store.enforce()
        // "watched" was read twice since its put; "new" never was.
        #expect(plan.objects.map(\.ref.key) == ["new"])
        #expect(plan.objects.first?.detail == "s3fifo: larger than the small queue, new and not read since its put")
    }

    @Test("a large object read under LRU is not evicted as unread after a change to S3-FIFO")
    func fromLRU() throws {
        let f = try Fixture { $0.policy = policy(.lru) }
        try put(f, "watched")
        try read(f, "watched")
        try put(f, "unwatched")
        f.store.policy = policy(.s3fifo)  // the new default order, as after an upgrade
        try put(f, "new")  // 2,100 bytes: 100 over
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["unwatched"])
    }
}
