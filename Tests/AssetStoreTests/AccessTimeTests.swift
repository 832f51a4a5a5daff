// Access times kept in memory (Store+Access.swift): a touch writes nothing until a flush, reads
// show it at once, and a flush (its own, a policy run's, a query's or the close's) writes them
// all in one commit, never moving `accessed` backwards.

import Foundation
import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct AccessTimeTests {
    /// `accessed` as the database holds it.
    private func stored(_ f: Fixture, _ r: ObjectRef) throws -> Double? {
        try f.store.read { try $0.get(r) }?.accessed
    }

    @Test("a touch is pending until a flush, which writes every pending one in one commit")
    func touchIsPendingUntilFlush() throws {
        let f = try Fixture()
        try f.store.write { tx in for k in ["a", "b", "c"] { try tx.put(ref("c", k), value: [:]) } }
        let put = try stored(f, ref("c", "a"))
        f.clock.advance(10)
        try f.store.touch(ref("c", "c"))
        try f.store.touch(ref("c", "a"))
        #expect(f.store.accessStatistics["pending"] == 2)
        #expect(try stored(f, ref("c", "a")) == put, "nothing written yet")
        let json = try JSONValue.parse(
            String(decoding: try #require(try f.store.objectJSON(ref("c", "a"))), as: UTF8.self))
        #expect(json["accessed"]?.doubleValue == f.clock.now, "a get shows the pending time")
        let before = try f.store.read { try $0.lastCommit() }
        let report = try #require(try f.store.flushAccesses())
        #expect(report.commit == before + 1)
        #expect(try stored(f, ref("c", "a")) == f.clock.now && stored(f, ref("c", "c")) == f.clock.now)
        #expect(try stored(f, ref("c", "b")) == put)
        #expect(f.store.accessStatistics == ["pending": 0, "flushes": 1, "flushed": 2, "touches": 2])
        #expect(try f.store.flushAccesses() == nil, "nothing left: no commit")
    }

    @Test("a missing object's touch is not_found and records nothing")
    func missingIsNotFound() throws {
        let f = try Fixture()
        #expect(throws: StoreError.self) { try f.store.touch(ref("c", "none")) }
        #expect(f.store.accessStatistics["pending"] == 0)
    }

    @Test("a put after a touch keeps the later time: accessed never moves backwards")
    func neverBackwards() throws {
        let f = try Fixture()
        try f.store.write { try $0.put(ref("c", "k"), value: [:]) }
        try f.store.touch(ref("c", "k"))
        f.clock.advance(5)
        try f.store.write { try $0.put(ref("c", "k"), value: [1]) }
        try f.store.flushAccesses()
        #expect(try stored(f, ref("c", "k")) == f.clock.now)
    }

    @Test("an index query, a dry policy run and the close each write pending touches first")
    func flushedBeforeQueryPolicyAndClose() throws {
        let f = try Fixture()
        try f.store.write { tx in for k in ["a", "b"] { try tx.put(ref("c", k), value: [:]) } }
        f.clock.advance(1)
        try f.store.touch(ref("c", "a"))
        let rows = try f.store.query(clause: "ORDER BY accessed DESC LIMIT 1")
        #expect(rows.map(\.ref) == [ref("c", "a")], "the query saw the touch")
        #expect(f.store.accessStatistics["flushes"] == 1)

        f.clock.advance(1)
        try f.store.touch(ref("c", "b"))
        _ = try f.store.evict(bytes: 1, owner: nil, dryRun: true)
        #expect(f.store.accessStatistics["flushes"] == 2, "a dry run flushed")
        #expect(try stored(f, ref("c", "b")) == f.clock.now)

        f.clock.advance(1)
        try f.store.touch(ref("c", "a"))
        let touched = f.clock.now
        try f.reopen()
        #expect(try stored(f, ref("c", "a")) == touched, "the close wrote it")
    }

    @Test("a flush writes accessed alone: a clause on accessed finds the touched object, size and files stay")
    func flushLeavesIndexRows() throws {
        let f = try Fixture()
        try f.store.write { tx in for k in ["a", "b"] { try tx.put(ref("c", k), value: ["n": 1]) } }
        let put = f.clock.now
        f.clock.advance(3)
        try f.store.touch(ref("c", "b"))
        try f.store.flushAccesses()
        let rows = try f.store.query(clause: "WHERE accessed > \(put) ORDER BY key")
        #expect(rows.map(\.ref) == [ref("c", "b")])
        #expect(
            try f.store.query(clause: "WHERE size = 0 AND files = 0 ORDER BY key").map(\.ref) == [
                ref("c", "a"), ref("c", "b"),
            ])
    }

    @Test("a point reader's touch: without a check it records the access, a check sees the owner and may refuse")
    func pointReaderTouch() throws {
        let f = try Fixture()
        try f.store.write { try $0.put(ref("c", "k"), value: [:], metadata: nil, owner: "olaf") }
        let reader = try PointReader(store: f.store)
        f.clock.advance(2)
        try reader.touch(ref("c", "k"), check: nil)
        #expect(f.store.accessStatistics["touches"] == 1)
        #expect(throws: StoreError.self) { try reader.touch(ref("c", "none"), check: nil) }

        struct Refused: Error {}
        var seen: [String] = []
        try reader.touch(ref("c", "k")) { seen.append($0) }
        #expect(throws: Refused.self) { try reader.touch(ref("c", "k")) { _ in throw Refused() } }
        #expect(seen == ["olaf"])
        #expect(f.store.accessStatistics["touches"] == 2, "the refused touch recorded nothing")
        #expect(throws: StoreError.self) { try reader.touch(ref("c", "none")) { _ in } }
        try f.store.flushAccesses()
        #expect(try stored(f, ref("c", "k")) == f.clock.now)
    }
}
