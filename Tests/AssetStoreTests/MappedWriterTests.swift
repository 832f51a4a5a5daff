// A policy run reads the database through a map on the writer (fast over a cold cache), and
// the map goes when the run ends, so the daemon's resident memory does not keep its pages.

import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct MappedWriterTests {
    @Test("a policy run maps the database for the writer while it runs, and unmaps it after, dry runs too")
    func mapOnlyDuringRun() throws {
        let f = try Fixture()
        for i in 0..<5 { try f.put([(ref("c", "k\(i)"), ["n": .int(Int64(i))])]) }
        f.clock.advance(7200)
        #expect(try f.store.writerMapSize() == 0)
        let store: Store = f.store
        let seen = Mutex<[String]>([])
        let plan = try store.expire(collection: nil, olderThan: 3600, idle: nil) { _ in
            let size = Result { try store.writerMapSize() }
            seen.withLock { $0.append((try? size.get()).map(String.init) ?? "\(size)") }
        }
        #expect(plan.objects.count == 5)
        let sizes = seen.withLock { $0 }
        #expect(!sizes.isEmpty && sizes.allSatisfy { $0 == String(Store.policyMapSize) }, "\(sizes)")
        #expect(try store.writerMapSize() == 0)
        _ = try store.expire(collection: nil, olderThan: 3600, idle: nil, dryRun: true)
        #expect(try store.writerMapSize() == 0)
    }
}
