// A lease and an unlink of the same file are ordered: the sweep checks leases and unlinks
// under the lease registry's lock, so a lease answered to a client is never followed by the
// unlink of its file.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import Testing

@Suite("lease and unlink ordering")
struct LeaseUnlinkRaceTests {
    @Test("a lease asked for while an unlink runs is answered only after it")
    func acquireWaitsForUnlink() throws {
        let f = try Fixture()
        let path = try f.makeFile("a")
        let acquired = Flag()
        let protections = f.store.protections
        let ran = protections.unlessLeased(file: path) {
            let t = Thread {
                _ = try? protections.acquire(objects: [], files: [path], ttl: 60)
                acquired.set()
            }
            t.start()
            Thread.sleep(forTimeInterval: 0.2)
            return !acquired.value  // still waiting
        }
        #expect(ran == true, "the lease was answered while the unlink decision was held")
        var waited = 0
        while !acquired.value && waited < 200 {
            Thread.sleep(forTimeInterval: 0.01)
            waited += 1
        }
        #expect(acquired.value)
        // Now leased: the next unlink decision does not run.
        #expect(f.store.protections.unlessLeased(file: path) { true } == nil)
    }
}

private final class Flag: Sendable {
    private let v = Mutex(false)
    var value: Bool { v.withLock { $0 } }
    func set() { v.withLock { $0 = true } }
}
