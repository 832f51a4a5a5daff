// A lease and an unlink of the same file are ordered: the sweep and verify --delete-orphans
// check leases and unlink under the lease registry's lock, so a lease answered to a client is
// never followed by the unlink of its file.

@testable import AssetStore
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
        let leases = f.store.leases
        let leaseWaits = DispatchSemaphore(value: 0)
        leases.unlinkWaits.withLock { $0 = { leaseWaits.signal() } }
        let ran = leases.unlessLeased(file: path) {
            let t = Thread {
                _ = try? leases.acquire(objects: [], files: [path], ttl: 60)
                acquired.set()
            }
            t.start()
            // The lease found the decision held and waits (a lease that did not wait would be
            // answered without this, and the wait below would run out).
            _ = leaseWaits.wait(timeout: .now() + 60)
            return !acquired.value  // still waiting
        }
        #expect(ran == true, "the lease was answered while the unlink decision was held")
        var waited = 0
        while !acquired.value && waited < 6000 {
            Thread.sleep(forTimeInterval: 0.01)
            waited += 1
        }
        #expect(acquired.value)
        // Now leased: the next unlink decision does not run.
        #expect(f.store.leases.unlessLeased(file: path) { true } == nil)
    }

    @Test("an orphan leased after delete-orphans checked it, before its unlink, is kept and not reported")
    func leaseBeforeOrphanUnlink() throws {
        let f = try Fixture()
        let path = try f.makeFile("old.bin")
        let store = f.store!
        let leased = Mutex<[String]>([])
        store.state.withLock {
            $0.orphanUnlinkDecided = { p in
                if (try? store.leases.acquire(objects: [], files: [p], ttl: 60)) != nil {
                    leased.withLock { $0.append(p) }
                }
            }
        }
        f.tagRoots()
        var o = VerifyOptions()
        o.orphans = true
        o.deleteOrphans = true
        let r = try store.verify(o)
        #expect(leased.withLock { $0 } == [path], "the hook ran with the orphan")
        #expect(f.exists(path), "the orphan was removed after its lease was answered")
        #expect(r.found == 0, "\(r.json)")
    }
}

private final class Flag: Sendable {
    private let v = Mutex(false)
    var value: Bool { v.withLock { $0 } }
    func set() { v.withLock { $0 = true } }
}
