// A policy run reads the database through a map on the writer (fast over a cold cache), with
// a larger page cache (a batch's dirty pages stay in it), and both go when the run ends, so
// the daemon's resident memory does not keep their pages.

import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct MappedWriterTests {
    @Test(
        "a policy run maps the database and grows the writer's cache while it runs, and undoes both after, dry runs too"
    )
    func mapOnlyDuringRun() throws {
        let f = try Fixture()
        for i in 0..<5 { try f.put([(ref("c", "k\(i)"), ["n": .int(Int64(i))])]) }
        f.clock.advance(7200)
        #expect(try f.store.writerMapSize() == 0)
        let cacheAtOpen = try f.store.writerCacheSize()
        let store: Store = f.store
        let seen = Mutex<[String]>([])
        let plan = try store.expire(collection: nil, olderThan: 3600, idle: nil) { _ in
            let size = Result { "\(try store.writerMapSize()) \(try store.writerCacheSize())" }
            seen.withLock { $0.append((try? size.get()) ?? "\(size)") }
        }
        #expect(plan.objects.count == 5)
        let sizes = seen.withLock { $0 }
        let during = "\(Store.policyMapSize) \(Store.policyWriterCacheKiB)"
        #expect(!sizes.isEmpty && sizes.allSatisfy { $0 == during }, "\(sizes)")
        #expect(try store.writerMapSize() == 0)
        #expect(try store.writerCacheSize() == cacheAtOpen)
        _ = try store.expire(collection: nil, olderThan: 3600, idle: nil, dryRun: true)
        #expect(try store.writerMapSize() == 0)
        #expect(try store.writerCacheSize() == cacheAtOpen)
    }
}
