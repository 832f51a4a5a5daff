// A `min_free` step's count of the unlink queue goes on incrementally between batches; it may
// read high (rows that left the queue), never low: each test changes the queue between two
// counts the way another write can, and checks the count against the whole queue counted.
// MinFreeQueue reads no free space, so no filesystem is mounted.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("MinFreeQueue: the count never reads low")
struct MinFreeQueueTests {
    /// A queue count on device 1, and a store with unlink_delay 0.
    private let f: Fixture
    private let queue = MinFreeQueue(devices: [1], placeholders: "(?)")

    init() throws { f = try Fixture() }

    /// Queues `path` (100 bytes, inode `inode`, device 1) 10 s ago, due at `due`.
    @discardableResult
    private func queueRow(_ path: String, inode: Int64, due: Double, attempts: Int = 0) throws -> Int64 {
        try f.store.write { tx in
            try tx.db.execute(
                sql: """
                    INSERT INTO unlink_queue (path, device, inode, size, commit_no, queued_at, next_attempt, attempts)
                    VALUES (?, 1, ?, 100, 0, ?, ?, ?)
                    """, arguments: [path, inode, f.clock.now - 10, due, attempts])
            return tx.db.lastInsertedRowID
        }.value
    }

    /// The count so far, then the whole queue counted apart (the count goes on unchanged).
    private func counts() throws -> (count: Int64, whole: Int64) {
        try f.store.write { tx in
            let count = try queue.count(tx)
            let whole = try MinFreeQueue(devices: [1], placeholders: "(?)").count(whole: tx)
            return (count, whole)
        }.value
    }

    private func execute(_ sql: String, _ arguments: StatementArguments = []) throws {
        try f.store.write { tx in try tx.db.execute(sql: sql, arguments: arguments) }
    }

    @Test("a deferred row that comes due counts")
    func deferredComesDue() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now + 50)
        #expect(try counts() == (0, 0))
        f.clock.advance(100)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    /// A lease's end reads the clock before the writer is free: a policy batch may count in
    /// between, and the row's new next attempt lands at or before that count.
    @Test("a lease end committed after a count, with the clock read before it, counts")
    func lateLeaseEnd() throws {
        let path = f.root + "/a"
        let lease = try f.store.leases.acquire(objects: [], files: [path], ttl: 600)
        try queueRow(path, inode: 1, due: lease.expires)
        let released = try #require(f.store.leases.release(lease.id))
        f.clock.advance(5)
        #expect(try counts() == (0, 0))  // not leased any more, not due yet
        f.clock.advance(-5)  // the clock as the lease's end read it
        #expect(try f.store.leasesEnded([released]) == 1)
        f.clock.advance(10)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    @Test("deferrals ended at open, committed after a count, count")
    func lateLeaseDeferralsEnded() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now + 600)
        f.clock.advance(5)
        #expect(try counts() == (0, 0))
        f.clock.advance(-5)
        #expect(try f.store.endLeaseDeferrals() == 1)
        f.clock.advance(10)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    @Test("a row queued by another write counts")
    func insertedElsewhere() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now - 10)
        #expect(try counts() == (100, 100))
        try queueRow(f.root + "/b", inode: 2, due: f.clock.now - 10)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 200, "\(c)")
    }

    @Test("a row that failed reads high, not low")
    func failedRow() throws {
        let id = try queueRow(f.root + "/a", inode: 1, due: f.clock.now - 10)
        try queueRow(f.root + "/b", inode: 2, due: f.clock.now - 10, attempts: 1)
        #expect(try counts() == (100, 100))
        try execute("UPDATE unlink_queue SET attempts = 1, next_attempt = ? WHERE id = ?", [f.clock.now + 1, id])
        f.clock.advance(2)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 0, "\(c)")
    }

    @Test("a row that left the queue reads high, not low")
    func deletedRow() throws {
        let id = try queueRow(f.root + "/a", inode: 1, due: f.clock.now - 10)
        try queueRow(f.root + "/b", inode: 2, due: f.clock.now - 10)
        #expect(try counts() == (200, 200))
        try execute("DELETE FROM unlink_queue WHERE id = ?", [id])
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    @Test("after the clock went back, rows due then count")
    func clockBack() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now + 20)
        #expect(try counts() == (0, 0))
        f.clock.advance(-100)
        try queueRow(f.root + "/b", inode: 2, due: f.clock.now - 10)
        var c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
        f.clock.advance(130)
        c = try counts()
        #expect(c.count >= c.whole && c.whole == 200, "\(c)")
    }

    @Test("a deferred row counts once due by both clocks, not at a step forward of the wall clock")
    func stepForward() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now + 50)
        #expect(try counts() == (0, 0))
        f.clock.step(3600)
        #expect(try counts() == (0, 0), "the sweep takes it 50 s on, not now")
        f.clock.advance(49)
        #expect(try counts() == (0, 0))
        f.clock.advance(1)
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    @Test("after a step forward, a row that came due while the step's measure shrank by jitter still counts")
    func stepForwardJitter() throws {
        let t = f.clock.now
        try queueRow(f.root + "/a", inode: 1, due: t + 10.2)
        f.clock.step(3600)
        #expect(try counts() == (0, 0))
        f.clock.advance(10)
        #expect(try counts() == (0, 0), "due 0.2 s after the step-free clock's now")
        // Less than a step: the wall clock read 0.4 s lower against the boot clock.
        f.clock.step(-0.4)
        f.clock.advance(1)
        // Today the window began at the last count's time less the smaller step, 0.4 s late.
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }

    @Test("a row deferred before a step back of the wall clock counts as the sweep's bound leaves it")
    func stepBack() throws {
        try queueRow(f.root + "/a", inode: 1, due: f.clock.now + 50)
        #expect(try counts() == (0, 0))
        f.clock.step(-86_400)
        // The bound makes it due by now plus unlink_delay (0): it counts before and after it.
        #expect(try counts() == (100, 100))
        try f.store.boundQueue(after: f.store.clocks.read())
        let c = try counts()
        #expect(c.count >= c.whole && c.whole == 100, "\(c)")
    }
}
