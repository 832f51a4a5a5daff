// The memory one client's statement may hold (QueryConnection+Memory.swift, query_memory.c):
// a clause that would make more values of the length limit than the bound allows is
// query_rejected once it passes the bound, before it holds the rest; a stored value of the
// length limit is still read, compared, copied and sorted.

import Testing
import AssetStoreTestSupport

@testable import AssetStore

@Suite struct QueryMemoryBoundTests {
    static let notes = IndexDefinition(name: "notes", version: "1", columns: [column("text", .text, "text")])
    static let lengthLimit = 16 << 20

    static func fixture() throws -> Fixture {
        try Fixture {
            $0.indexes = [notes]
            $0.queryLengthLimit = lengthLimit
        }
    }

    /// `max` of `count` printf values of 16,000,000 bytes: constant arguments, each computed
    /// once and held for the whole statement.
    static func printfs(_ count: Int) -> String {
        "length(max(" + (0..<count).map { "printf('%.*c', 16000000, '\($0 % 10)')" }.joined(separator: ", ") + "))"
    }

    @Test("62 printf values of 16 MB are refused past the bound, which the message names")
    func manyLongValues() throws {
        let f = try Self.fixture()
        try f.store.write { tx in try tx.put(ref("n", "a"), value: ["text": "x"]) }
        let limit = QueryConnection.memoryBound(lengthLimit: Self.lengthLimit)
        let e = expectCode(.queryRejected) { try f.store.aggregate(index: "notes", function: Self.printfs(62)) }
        #expect(e?.message.contains("needed more than \(limit) bytes of memory") == true, "\(String(describing: e))")
        // Refused only near the bound, when the next value would pass it: the values before
        // it were held and counted.
        let peak = f.store.queries.idleMemoryPeaks.max() ?? 0
        #expect(peak > limit - 32_000_000, "peak \(peak) against \(limit)")
        // The connection answers the next query, and a few such values are within the bound.
        #expect(try f.store.aggregate(index: "notes", function: Self.printfs(2)) == .value(16_000_000))
        #expect(try f.store.aggregate(index: "notes", function: "COUNT(*)") == .value(1))
    }

    @Test("values made without a function call count as well: 40 copies of one printf joined with ||")
    func concatenatedValues() throws {
        let f = try Self.fixture()
        try f.store.write { tx in try tx.put(ref("n", "a"), value: ["text": "x"]) }
        let copies = (0..<40).map { "t || '\($0)'" }.joined(separator: ", ")
        let function = "length((SELECT max(\(copies)) FROM (SELECT printf('%.*c', 8000000, 'a') AS t)))"
        let e = expectCode(.queryRejected) { try f.store.aggregate(index: "notes", function: function) }
        #expect(e?.message.contains("bytes of memory") == true, "\(String(describing: e))")
        let peak = f.store.queries.idleMemoryPeaks.max() ?? 0
        #expect(peak > QueryConnection.memoryBound(lengthLimit: Self.lengthLimit) - 32_000_000, "peak \(peak)")
    }

    @Test("a stored value near the length limit is read, compared, copied, replaced and sorted")
    func longStoredValue() throws {
        let f = try Self.fixture()
        let long = String(repeating: "ab", count: 7_500_000)
        try f.store.write { tx in
            try tx.put(ref("n", "long"), value: ["text": .string(long)])
            try tx.put(ref("n", "short"), value: ["text": "b"])
        }
        let rows = try f.store.query(
            index: "notes", clause: "WHERE text = ?", parameters: [.string(long)], include: .rows)
        #expect(rows.map(\.ref.key) == ["long"])
        #expect(rows.first?.columns?["text"] == .string(long))
        let sorted = try f.store.query(index: "notes", clause: "ORDER BY text DESC")
        #expect(sorted.map(\.ref.key) == ["short", "long"])
        let made = try f.store.aggregate(
            index: "notes", function: "max(length(replace(text, 'a', 'c')) + length(printf('%s%s', text, 'x')))",
            clause: "WHERE text > ?", parameters: ["a"])
        #expect(made == .value(.int(15_000_000 + 15_000_001)))
        // It held the copies it made, about eight values of 15 MB.
        let peak = f.store.queries.idleMemoryPeaks.max() ?? 0
        #expect(peak >= 100_000_000, "peak \(peak)")
        // Upper-cased and matched with LIKE as well: ten values of 15 MB, within the bound.
        let matched = try f.store.aggregate(
            index: "notes",
            function: "max(length(replace(text, 'a', 'c')) + length(printf('%s%s', text, 'x'))"
                + " + (upper(text) LIKE '%AB'))",
            clause: "WHERE text > ?", parameters: ["a"])
        #expect(matched == .value(.int(15_000_000 + 15_000_001 + 1)))
        let upperPeak = f.store.queries.idleMemoryPeaks.max() ?? 0
        #expect(upperPeak >= 100_000_000, "peak \(upperPeak)")
    }
}
