// The registry's lease bounds, with the test clock: lapsed leases stop counting when they
// lapse (before the sweep removes them), and in-process holders are neither bounded nor counted.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import Testing

@Suite("lease bounds")
struct LeaseBoundRegistryTests {
    let bounds = LeaseBounds(perHolder: 3, total: 5)

    func refs(_ n: Int, _ prefix: String) -> [ObjectRef] { (0..<n).map { ref("c", "\(prefix)\($0)") } }

    func refusal(_ body: () throws(StoreError) -> Lease) -> StoreError? {
        do throws(StoreError) {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("a lapsed lease frees its entries at once, though the sweep has not removed it")
    func lapsedFrees() throws {
        let f = try Fixture()
        let leases = f.store.leases
        _ = try leases.acquire(objects: refs(2, "a"), files: [], ttl: 10, holder: 1, bounds: bounds)
        _ = try leases.acquire(objects: refs(1, "b"), files: [], ttl: 100, holder: 1, bounds: bounds)
        let refused = refusal { () throws(StoreError) in
            try leases.acquire(objects: refs(1, "c"), files: [], ttl: 100, holder: 1, bounds: bounds)
        }
        #expect(refused?.code == .leaseLimit && refused?.detail?["value"] == 3)
        f.clock.advance(10)
        _ = try leases.acquire(objects: refs(2, "c"), files: [], ttl: 100, holder: 1, bounds: bounds)
        // The lapsed lease is still there for the sweep to hand back; removing it changes no count.
        #expect(leases.removeExpired().count == 1)
        #expect(
            refusal { () throws(StoreError) in
                try leases.acquire(objects: refs(1, "d"), files: [], ttl: 100, holder: 1, bounds: bounds)
            }?.code == .leaseLimit)
    }

    @Test("another holder's lapsed lease frees room in the total; a refusal spends no lease id")
    func othersLapsedFreeTotal() throws {
        let f = try Fixture()
        let leases = f.store.leases
        let first = try leases.acquire(objects: refs(3, "a"), files: [], ttl: 1, holder: 1, bounds: bounds)
        _ = try leases.acquire(objects: refs(2, "b"), files: [], ttl: 100, holder: 2, bounds: bounds)
        let refused = refusal { () throws(StoreError) in
            try leases.acquire(objects: refs(1, "c"), files: [], ttl: 100, holder: 3, bounds: bounds)
        }
        #expect(refused?.detail?["limit"] == "control.total_lease_entries")
        f.clock.advance(1)
        let granted = try leases.acquire(objects: refs(3, "c"), files: [], ttl: 100, holder: 3, bounds: bounds)
        #expect(first.id == "L1" && granted.id == "L3", "the refused lease took no id")
    }

    @Test("lapsed leases the sweep has not removed yet are bounded too, at twice the bounds")
    func lapsedNotRemovedBounded() throws {
        let f = try Fixture()
        let leases = f.store.leases
        _ = try leases.acquire(objects: refs(3, "a"), files: [], ttl: 1, holder: 1, bounds: bounds)
        f.clock.advance(1)
        _ = try leases.acquire(objects: refs(3, "b"), files: [], ttl: 1, holder: 1, bounds: bounds)
        f.clock.advance(1)
        let refused = refusal { () throws(StoreError) in
            try leases.acquire(objects: refs(3, "c"), files: [], ttl: 1, holder: 1, bounds: bounds)
        }
        #expect(refused?.code == .leaseLimit && refused?.message.contains("next sweep") == true)
        #expect(leases.removeExpired().count == 2)
        _ = try leases.acquire(objects: refs(3, "c"), files: [], ttl: 1, holder: 1, bounds: bounds)
    }

    @Test("a lease over its bound by itself is told to lease less, not about lapsed leases")
    func oversizedLeaseMessage() throws {
        let f = try Fixture()
        let refused = refusal { () throws(StoreError) in
            try f.store.leases.acquire(objects: refs(7, "a"), files: [], ttl: 1, holder: 1, bounds: bounds)
        }
        #expect(refused?.code == .leaseLimit)
        #expect(refused?.message.contains("lease less at once") == true, "\(refused?.message ?? "")")
    }

    @Test("ended leases of the same files count each path once against the cap")
    func endedPathsDistinct() {
        var ended = EndedLeaseFiles(cap: 1000)
        let files = (0..<1000).map { "/var/cache/assetd/f\($0)" }
        let lease = Lease(id: "L1", objects: [], files: files, expires: 0, holder: 1)
        ended.add(Array(repeating: lease, count: 6))
        #expect(!ended.overflowed && ended.files.count == 1000)
        ended.add([Lease(id: "L2", objects: [], files: ["/var/cache/assetd/g"], expires: 0, holder: 2)])
        #expect(ended.overflowed && ended.files.isEmpty)
    }

    /// Runs `acquire` on another thread while `hold` holds a gate (from `taken` until it returns),
    /// and returns whether `acquire` had to wait for the gate (its hook ran) and what it threw.
    func refusedWhileHeld(
        _ hook: borrowing Mutex<(@Sendable () -> Void)?>, hold: (() -> Void) -> Void,
        _ acquire: @escaping @Sendable () throws(StoreError) -> Lease
    ) -> (waited: Bool, code: StoreError.Code?) {
        let answeredOrWaiting = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let waited = Mutex(false)
        let code = Mutex<StoreError.Code?>(nil)
        hook.withLock {
            $0 = {
                waited.withLock { $0 = true }
                answeredOrWaiting.signal()
            }
        }
        hold {
            Thread {
                do throws(StoreError) {
                    _ = try acquire()
                } catch {
                    code.withLock { $0 = error.code }
                }
                answeredOrWaiting.signal()
                finished.signal()
            }.start()
            answeredOrWaiting.wait()
        }
        finished.wait()
        hook.withLock { $0 = nil }
        return (waited.withLock { $0 }, code.withLock { $0 })
    }

    @Test("a refused lease waits for no unlink nor policy batch under way")
    func refusalTakesNoGate() throws {
        let f = try Fixture()
        let leases = f.store.leases
        let file = try f.makeFile("a.bin")
        let refs = refs(1, "x")
        _ = try leases.acquire(objects: self.refs(3, "a"), files: [], ttl: 60, holder: 1, bounds: bounds)
        let bounds = bounds
        let byUnlink = refusedWhileHeld(
            leases.unlinkWaits,
            hold: { body in
                _ = leases.unlessLeased(file: file) { body() }
            }
        ) { () throws(StoreError) in
            try leases.acquire(objects: [], files: [file], ttl: 60, holder: 1, bounds: bounds)
        }
        #expect(byUnlink.code == .leaseLimit && !byUnlink.waited)
        let byBatch = refusedWhileHeld(
            leases.acquireWaits,
            hold: { body in
                leases.beginPolicyBatch()
                body()
                leases.endPolicyBatch()
            }
        ) { () throws(StoreError) in
            try leases.acquire(objects: refs, files: [], ttl: 60, holder: 1, bounds: bounds)
        }
        #expect(byBatch.code == .leaseLimit && !byBatch.waited)
    }

    @Test("the total counts every holder; release and releaseAll free; in-process holders are not bounded")
    func totalAndInProcess() throws {
        let f = try Fixture()
        let leases = f.store.leases
        let file = try f.makeFile("a.bin")
        let mine = try leases.acquire(objects: refs(2, "a"), files: [file], ttl: 60, holder: 1, bounds: bounds)
        _ = try leases.acquire(objects: refs(2, "b"), files: [], ttl: 60, holder: 2, bounds: bounds)
        let refused = refusal { () throws(StoreError) in
            try leases.acquire(objects: refs(1, "c"), files: [], ttl: 60, holder: 3, bounds: bounds)
        }
        #expect(refused?.detail?["limit"] == "control.total_lease_entries" && refused?.detail?["value"] == 5)
        #expect(leases.active().count == 2)
        _ = try leases.acquire(objects: refs(10, "n"), files: [], ttl: 60, holder: nil, bounds: bounds)
        _ = try leases.acquire(objects: refs(10, "m"), files: [], ttl: 60)
        leases.release(mine.id)
        _ = try leases.acquire(objects: refs(3, "c"), files: [], ttl: 60, holder: 3, bounds: bounds)
        leases.releaseAll(holder: 2)
        _ = try leases.acquire(objects: refs(2, "d"), files: [], ttl: 60, holder: 4, bounds: bounds)
        #expect(
            refusal { () throws(StoreError) in
                try leases.acquire(objects: refs(1, "e"), files: [], ttl: 60, holder: 4, bounds: bounds)
            }?.code == .leaseLimit)
    }
}
