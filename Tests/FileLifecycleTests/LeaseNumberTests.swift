// Lease ids never repeat for a store, across restarts too, and every start's come after every
// earlier start's (LeaseNumbers): an id saved before a restart (a release, a list's `after`)
// names no new lease and skips none (the wall clock plays no part: it is not read). A block is
// synced before use, and a backup's copy numbers past its source.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Synchronization
import GRDB
import Testing

@Suite("lease numbers")
struct LeaseNumberTests {
    private func numbers(_ ids: [String]) -> [UInt64] { ids.map { UInt64($0.dropFirst()) ?? 0 } }

    private func take(_ f: Fixture, _ n: Int) throws -> [String] {
        try (0..<n).map { i in try f.store.leases.acquire(objects: [], files: ["\(f.root)/f\(i)"], ttl: 600).id }
    }

    /// `lease.last`: the last number reserved.
    private func lastReserved(_ f: Fixture) throws -> UInt64 {
        let last = try f.store.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.leaseNumbersKey])
        }
        return UInt64(try #require(last))
    }

    @Test("two starts give disjoint ids, the second's after the first's")
    func acrossRestarts() throws {
        let f = try Fixture()
        let first = try take(f, 3)
        #expect(first.allSatisfy { $0.first == "L" } && numbers(first) == numbers(first).sorted())
        try f.reopen()
        let second = try take(f, 3)
        #expect(Set(first).isDisjoint(with: second), "\(first) \(second)")
        #expect(numbers(second).min()! > numbers(first).max()!, "\(first) \(second)")
        // Saved before the restart: names no lease now; as `after`, skips none of the new ones.
        #expect(f.store.leases.release(first[0]) == nil)
        #expect(try f.store.leases.list(after: first[2], limit: 10).leases.map(\.id) == second)
        #expect(try f.store.leases.list(after: first[0], limit: 10).leases.map(\.id) == second)
    }

    @Test("a run past its block reserves the next, concurrent acquires included, and the next start goes on after")
    func blocks() throws {
        let f = try Fixture()
        let (leases, root) = (f.store.leases, f.root)
        let before = try lastReserved(f)
        // The open's block used up, and small blocks: the acquires below reserve several.
        leases.state.withLock { $0.next = $0.end }
        leases.numbers.perBlock.store(7, ordering: .relaxed)
        let ids = Mutex([[UInt64]](repeating: [], count: 4))
        let failures = Mutex([String]())
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<25 {
                do {
                    let objects = i % 2 == 0 ? [ref("c", "t\(t)-\(i)")] : []
                    let id = try leases.acquire(objects: objects, files: ["\(root)/t\(t)/\(i)"], ttl: 600).id
                    ids.withLock { $0[t].append(UInt64(id.dropFirst()) ?? 0) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let perThread = ids.withLock { $0 }
        for t in perThread { #expect(zip(t, t.dropFirst()).allSatisfy { $0 < $1 }, "\(t)") }
        let all = perThread.flatMap { $0 }
        #expect(Set(all).count == 100)
        let last = try lastReserved(f)
        #expect((last - before) % 7 == 0 && last - before >= 100, "lease.last went from \(before) to \(last)")
        #expect(all.min()! > before && all.max()! <= last)
        try f.reopen()
        #expect(numbers(try take(f, 1))[0] > last)
    }

    @Test("with a quarter of a block left the next is reserved ahead: the acquires past the block do not wait for it")
    func reservedAhead() throws {
        let f = try Fixture()
        let n = f.store.leases.numbers
        n.perBlock.store(8, ordering: .relaxed)
        f.store.leases.state.withLock { $0.next = $0.end }
        let reserved = DispatchSemaphore(value: 0)
        n.aheadDone.withLock { $0 = { reserved.signal() } }
        let (before, waited) = (try lastReserved(f), n.waitedFor.load(ordering: .relaxed))
        var ids = try take(f, 5)  // the first waits for a block of 8; 3 left
        #expect(try lastReserved(f) == before + 8, "reserved ahead with more than a quarter left")
        ids += try take(f, 1)  // 2 left: a quarter
        try #require(f.store.leases.state.withLock { $0.aheadFor } != 0, "no reservation ahead started")
        // A guard against a hang, not a measure: the reservation ends in far less.
        #expect(reserved.wait(timeout: .now() + 600) == .success)
        #expect(try lastReserved(f) == before + 16)
        ids += try take(f, 5)  // 2 of the block, 3 of the next
        #expect(n.waitedFor.load(ordering: .relaxed) == waited + 1, "an acquire waited for a block")
        #expect(numbers(ids) == Array(before + 1...before + 11))
    }

    @Test("a block whose sync fails is not used: the lease is refused, and the next start numbers after it")
    func failedSync() throws {
        let f = try Fixture()
        let leases = f.store.leases
        leases.state.withLock { $0.next = $0.end }
        let reserved = try lastReserved(f)
        f.store.injectedSyncError.store(EIO, ordering: .relaxed)
        var failed: StoreError?
        do {
            _ = try leases.acquire(objects: [], files: ["\(f.root)/a"], ttl: 600)
        } catch {
            failed = error
        }
        #expect(failed?.isUnsynced == true, "\(String(describing: failed))")
        #expect(leases.active().isEmpty)
        #expect(leases.state.withLock { $0.next >= $0.end }, "a number of the unsynced block was kept")
        try f.reopen()
        #expect(numbers(try take(f, 1))[0] > reserved + LeaseNumbers.block)
    }

    @Test("a store started on a backup numbers its leases past every lease its source granted after the backup")
    func backup() throws {
        let f = try Fixture()
        _ = try take(f, 2)
        let copy = f.dir + "/copy.sqlite"
        _ = try f.store.backup(to: copy)
        var taken = try take(f, 3)
        try f.reopen()
        taken += try take(f, 3)
        // Restored as assetctl(1) says: the copy's mark cleared, then started on.
        var opener = f.configuration
        opener.opensCopies = true
        opener.writesCopies = true
        let marked = try Store(path: copy, configuration: opener)
        #expect(try marked.restore(configuredSource: f.dbPath, force: false).mark != nil)
        marked.close()
        let restored = try Store(path: copy, configuration: f.configuration)
        defer { restored.close() }
        let id = try restored.leases.acquire(objects: [], files: ["\(f.root)/r"], ttl: 600).id
        #expect(numbers([id])[0] > numbers(taken).max()!, "\(id) \(taken)")
    }

    @Test("a store from before numbers were stored numbers leases past any of its runs'")
    func olderStore() throws {
        let f = try Fixture()
        #expect(numbers(try take(f, 1)) == [1])  // a new store starts at L1
        f.store.close()
        let db = try DatabaseQueue(path: f.dbPath)
        try db.write { db in
            try db.execute(sql: "DELETE FROM meta WHERE key = 'lease.last'")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v9'")
        }
        try db.close()
        f.store = try Store(path: f.dbPath, configuration: f.configuration)
        #expect(numbers(try take(f, 1))[0] >= 1_000_000_000_000)
    }

    @Test("a read-only store opens without writing lease numbers and grants no lease")
    func readOnly() throws {
        let f = try Fixture()
        var c = f.configuration
        c.readOnly = true
        let other = try Store(path: f.dbPath, configuration: c)
        defer { other.close() }
        #expect(expectCode(.busy) { try other.leases.acquire(objects: [], files: ["\(f.root)/a"], ttl: 60) } != nil)
        // The writable store's numbers are untouched: its leases go on from its block.
        #expect(numbers(try take(f, 2)) == [1, 2])
    }
}
