// Lease ids never repeat for a store, across restarts too, and every start's come after every
// earlier start's (LeaseNumbers): an id saved before a restart (a release, a list's `after`)
// names no new lease and skips none, whatever the wall clock did meanwhile.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import GRDB
import Testing

@Suite("lease numbers")
struct LeaseNumberTests {
    private func numbers(_ ids: [String]) -> [UInt64] { ids.map { UInt64($0.dropFirst()) ?? 0 } }

    private func take(_ f: Fixture, _ n: Int) throws -> [String] {
        try (0..<n).map { i in try f.store.leases.acquire(objects: [], files: ["\(f.root)/f\(i)"], ttl: 600).id }
    }

    @Test("two starts give disjoint ids, the second's after the first's, with the clock stepped back")
    func acrossRestarts() throws {
        let f = try Fixture()
        let first = try take(f, 3)
        #expect(first.allSatisfy { $0.first == "L" } && numbers(first) == numbers(first).sorted())
        f.clock.advance(-86_400)
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
        f.store.leases.numbers.perBlock.store(3, ordering: .relaxed)
        let ids = Mutex([String]())
        let (leases, root) = (f.store.leases, f.root)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<25 {
                let id = try! leases.acquire(objects: [], files: ["\(root)/t\(t)/\(i)"], ttl: 600).id
                ids.withLock { $0.append(id) }
            }
        }
        let taken = ids.withLock { $0 }
        #expect(Set(taken).count == 100)
        let last = try f.store.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.leaseNumbersKey])
        }
        #expect(numbers(taken).max()! <= UInt64(last ?? 0))
        try f.reopen()
        let next = try take(f, 1)
        #expect(numbers(next)[0] > UInt64(last ?? .max))
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
