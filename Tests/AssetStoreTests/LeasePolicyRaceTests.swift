// A lease and a policy batch are ordered: a lease answered while a batch is between its
// decisions and its commit either came before the decisions (the object, or the object holding
// the file, is spared) or waited for the commit (it is already gone when the lease is answered).

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import Testing

@Suite("lease and policy batch ordering")
struct LeasePolicyRaceTests {
    /// Expires everything in `f` and, inside its first batch after the decisions, asks for a
    /// lease of `objects` and `files` on another thread; waits until that lease was answered
    /// or is waiting for the batch, then lets the batch commit. Returns whether the object
    /// existed when its lease was answered, whether `acquire` had to wait, and the plan.
    private func leaseDuringBatch(
        _ f: Fixture, objects: [ObjectRef], files: [String], probe: ObjectRef
    ) throws -> (existedWhenLeased: Bool, waited: Bool, plan: PolicyPlan) {
        let store = f.store!
        let answeredOrWaiting = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let existed = Mutex<Bool?>(nil)
        let waited = Mutex(false)
        let first = Mutex(true)
        store.leases.acquireWaits.withLock {
            $0 = {
                waited.withLock { $0 = true }
                answeredOrWaiting.signal()
            }
        }
        store.state.withLock {
            $0.policyBatchDecided = {
                guard
                    first.withLock({ f in
                        defer { f = false }; return f
                    })
                else { return }
                Thread {
                    _ = try? store.leases.acquire(objects: objects, files: files, ttl: 60)
                    // Read at once, before the batch can go on: what the client is told is protected.
                    let exists = (try? store.read { try $0.exists(probe) }) ?? false
                    existed.withLock { $0 = exists }
                    answeredOrWaiting.signal()
                    finished.signal()
                }.start()
                answeredOrWaiting.wait()
            }
        }
        let plan = try store.expire(collection: nil, olderThan: 0, idle: nil)
        finished.wait()
        return (existed.withLock { $0 } ?? false, waited.withLock { $0 }, plan)
    }

    @Test("an object leased while a batch decides is spared, or already gone when the lease is answered")
    func objectLeaseWaitsForCommit() throws {
        let f = try Fixture()
        let k = ref("c", "k")
        try f.put([(k, ["n": 1]), (ref("c", "other"), ["n": 2])])
        f.clock.advance(3600)  // past min_age
        let r = try leaseDuringBatch(f, objects: [k], files: [], probe: k)
        #expect(r.waited, "the lease was answered while the batch held its decisions")
        // What the client was told is protected is never deleted afterwards.
        if r.existedWhenLeased {
            #expect(try f.exists(k), "the leased object was expired after its lease was answered")
        }
        #expect(r.plan.objects.map(\.ref).contains(ref("c", "other")))
        #expect(f.store.leases.active().count == 1)
    }

    @Test("a file leased while a batch decides keeps its holder, or the holder is gone when the lease is answered")
    func fileLeaseWaitsForCommit() throws {
        let f = try Fixture()
        let k = ref("c", "k")
        let path = try f.makeFile("a")
        try f.put([(k, ["file": .string(path)]), (ref("c", "other"), ["n": 2])])
        f.clock.advance(3600)
        let r = try leaseDuringBatch(f, objects: [], files: [path], probe: k)
        // Answered between the batch's decisions and its commit, the lease kept the file
        // from its unlink but not the object holding it from the batch.
        #expect(r.waited, "the lease was answered while the batch held its decisions")
        if r.existedWhenLeased {
            #expect(try f.exists(k), "the holder of a leased file was expired after the lease was answered")
        }
        #expect(r.plan.objects.map(\.ref).contains(ref("c", "other")))
        #expect(f.store.leases.active().count == 1)
    }

    @Test("a lease that waited for a policy batch lapses its ttl after it is granted, not after it was asked for")
    func expiryFromTheGrant() throws {
        let f = try Fixture()
        let leases = f.store.leases
        let clock = f.clock
        let waiting = DispatchSemaphore(value: 0)
        leases.acquireWaits.withLock {
            $0 = {
                clock.advance(120)  // the batch takes longer than the ttl
                waiting.signal()
            }
        }
        leases.beginPolicyBatch()
        let granted = Mutex<Lease?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let l = try? leases.acquire(objects: [ref("c", "k")], files: [], ttl: 60)
            granted.withLock { $0 = l }
            done.signal()
        }.start()
        waiting.wait()
        leases.endPolicyBatch()
        done.wait()
        let lease = try #require(granted.withLock { $0 })
        #expect(lease.expires == clock.now + 60)
        #expect(leases.live(lease.id) != nil, "the lease was answered already lapsed")
    }
}
