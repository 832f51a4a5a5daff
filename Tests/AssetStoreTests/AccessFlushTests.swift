// The access flush writes many objects a statement (Store+Access.swift): each object still gets
// its own time and access count, an object deleted before the flush gets no eviction state,
// a time not later than the stored one writes nothing, and touches made while a flush writes
// are seen at once and written by the next one.

import AssetStoreTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@testable import AssetStore

@Suite("Access flush")
struct AccessFlushTests {
    /// The statements the writer connection starts while `body` runs that write access times
    /// (`accessed`) and access counts (`evict_queue`).
    private func writes(_ f: Fixture, _ body: () throws -> Void) throws -> (times: Int, counts: Int) {
        let seen = Mutex((times: 0, counts: 0))
        try f.store.write { tx in
            tx.db.trace(options: .statement) { event in
                let sql = event.description
                if sql.contains("SET accessed") { seen.withLock { $0.times += 1 } }
                if sql.contains("INTO evict_queue") { seen.withLock { $0.counts += 1 } }
            }
        }
        defer { _ = try? f.store.write { tx in tx.db.trace(options: .statement, nil) } }
        try body()
        return seen.withLock { $0 }
    }

    @Test("300 objects flush in two statements of each kind, each with its own time and count")
    func manyObjectsFewStatements() throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.order = .s3fifo
            $0.policy = p
        }
        let n = 300
        try f.store.write { tx in
            for i in 0..<n { try tx.put(ref("c", "k\(i)"), value: [:]) }
            try tx.put(ref("c", "gone"), value: [:])
        }
        var times: [Double] = []
        for i in 0..<n {
            for _ in 0...(i % 4) {
                f.clock.advance(0.001)
                try f.store.touch(ref("c", "k\(i)"))
            }
            times.append(f.clock.now)
        }
        try f.store.touch(ref("c", "gone"))
        try f.store.write { try $0.delete(ref("c", "gone")) }

        let seen = try writes(f) { try f.store.flushAccesses() }
        // 301 pending: one statement of 256 rows and one of 64 (45 used), an UPDATE and an
        // INSERT each. A statement per object would be 301 and 300.
        #expect(seen.times == 2 && seen.counts == 2, "\(seen)")
        #expect(f.store.accessStatistics["flushed"] == Int64(n + 1))

        let rows = try f.store.read { r in
            try Row.fetchAll(
                r.db,
                sql: """
                    SELECT o.key, o.accessed, q.freq FROM object o LEFT JOIN evict_queue q ON q.id = o.id
                    ORDER BY o.id
                    """)
        }
        #expect(rows.count == n)
        for (i, row) in rows.enumerated() {
            #expect(row["key"] as String == "k\(i)")
            #expect(row["accessed"] as Double == times[i], "k\(i) has its own last touch's time")
            #expect(row["freq"] as Int? == min(i % 4 + 1, 3), "k\(i) counted each touch, at most three")
        }
        let states = try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM evict_queue") }
        #expect(states == n, "the deleted object has no eviction state")
    }

    @Test("a flushed time not later than the stored one changes no row")
    func earlierTimeWritesNothing() throws {
        let f = try Fixture()
        try f.store.write { try $0.put(ref("c", "k"), value: [:]) }
        let put = f.clock.now
        try f.store.write { tx in
            let id = try #require(try Int64.fetchOne(tx.db, sql: "SELECT id FROM object"))
            try tx.writeAccesses([AccessRecord(id: id, time: put - 1, count: 1)])
            #expect(tx.db.changesCount == 0, "the row and its accessed index entry stay as they were")
            try tx.writeAccesses([AccessRecord(id: id, time: put + 1, count: 1)])
            #expect(tx.db.changesCount == 1)
        }
        let accessed = try f.store.read { r in try Double.fetchOne(r.db, sql: "SELECT accessed FROM object") }
        #expect(accessed == put + 1)
    }

    @Test("touches while a flush writes: reads see the later time, the next flush writes them")
    func touchesDuringAFlush() throws {
        let f = try Fixture()
        let store = f.store!
        let (a, b) = (ref("c", "a"), ref("c", "b"))
        try f.store.write { tx in for r in [a, b] { try tx.put(r, value: [:]) } }
        f.clock.advance(10)
        try store.touch(a)
        let first = f.clock.now
        let held = HeldFlush(store)
        #expect(store.pendingAccessCount == 0 && store.accessStatistics["pending"] == 1, "taken, not yet written")
        f.clock.advance(5)
        try store.touch(a)
        try store.touch(b)
        let json = try JSONValue.parse(String(decoding: try #require(try store.objectJSON(a)), as: UTF8.self))
        #expect(json["accessed"]?.doubleValue == f.clock.now, "a read sees the touch made during the flush")
        #expect(store.pendingAccessCount == 2 && store.accessStatistics["pending"] == 3)
        #expect(held.finish() != nil)
        let stored = { (r: ObjectRef) in try store.read { try $0.get(r) }?.accessed }
        #expect(try stored(a) == first, "the flush wrote what it took")
        #expect(store.accessStatistics == ["pending": 2, "flushes": 1, "flushed": 1, "touches": 3])
        try #require(try store.flushAccesses() != nil)
        #expect(try stored(a) == f.clock.now && stored(b) == f.clock.now)
        #expect(store.accessStatistics == ["pending": 0, "flushes": 2, "flushed": 3, "touches": 3])
    }

    @Test("an index query waits for a flush under way: it sees the touches that flush took")
    func queryWaitsForAFlushUnderWay() throws {
        let f = try Fixture()
        let store = f.store!
        let (a, b) = (ref("c", "a"), ref("c", "b"))
        try f.store.write { tx in for r in [a, b] { try tx.put(r, value: [:]) } }
        f.clock.advance(10)
        try store.touch(b)  // the latest access; unwritten, a and b tie and a comes first
        let held = HeldFlush(store)
        #expect(store.pendingAccessCount == 0 && store.accessStatistics["pending"] == 1, "taken, not yet written")
        // The writer goes only once the query is about to wait for the flush.
        let released = Mutex(false)
        store.state.withLock { s in
            s.queryWaitsForFlush = {
                released.withLock { $0 = true }
                held.release.signal()
            }
        }
        let order = try store.query(clause: "ORDER BY accessed DESC, key").map(\.ref)
        if !released.withLock({ $0 }) { held.release.signal() }
        held.done.wait()
        #expect(released.withLock { $0 }, "the query did not wait for the flush")
        #expect(order == [b, a], "the query missed the touch the flush under way had taken")
    }
}

/// A flush under way, held open: a write waiting for `release` keeps the writer, so the flush
/// has taken the pending touches (the initializer waits for that) and waits to write them.
/// `done` is signalled once it returned, with what it returned in `flushed`.
private final class HeldFlush: Sendable {
    let release = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let flushed = Mutex<CommitReport?>(nil)

    init(_ store: Store) {
        let inside = DispatchSemaphore(value: 0)
        Thread { [release] in
            _ = try? store.write { _ in
                inside.signal()
                release.wait()
            }
        }.start()
        inside.wait()
        Thread { [self] in
            flushed.withLock { $0 = try? store.flushAccesses() }
            done.signal()
        }.start()
        _ = pollFor { store.pendingAccessCount == 0 }
    }

    /// Lets the flush write, and returns what it returned.
    func finish() -> CommitReport? {
        release.signal()
        done.wait()
        return flushed.withLock { $0 }
    }
}
