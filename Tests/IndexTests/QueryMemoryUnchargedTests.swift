// What the query memory bound must not charge (QueryConnection+Memory.swift, query_memory.c):
// the writer and the engine's own statements on a thread that ran a refused query, and the
// objects a query reads after its rows.

import Testing
import AssetStoreTestSupport

@testable import AssetStore

@Suite struct QueryMemoryUnchargedTests {
    /// A bound of 40 MiB: eight values of 1 MiB and 32 MiB.
    static let lengthLimit = 1 << 20

    static func fixture() throws -> Fixture {
        try Fixture { $0.queryLengthLimit = lengthLimit }
    }

    @Test("after a refused query, the same thread writes and reads a value of 45 MB")
    func writerAfterRefusal() throws {
        let f = try Self.fixture()
        try f.store.write { tx in try tx.put(ref("n", "a"), value: ["text": "x"]) }
        let function =
            "length(max(" + (0..<62).map { _ in "printf('%.*c', 1000000, 'a')" }.joined(separator: ", ") + "))"
        let e = expectCode(.queryRejected) { try f.store.aggregate(function: function) }
        #expect(e?.message.contains("bytes of memory") == true, "\(String(describing: e))")
        // Charged to the refused query's account, this thread's SQLite allocations would pass
        // its 40 MiB bound: the writer's copy of the value, and the read's.
        let long = String(repeating: "ab", count: 7_500_000)
        try f.store.write { tx in
            try tx.put(ref("n", "long"), value: ["a": .string(long), "b": .string(long), "c": .string(long)])
        }
        let read = try #require(try f.store.get(ref("n", "long")))
        #expect(read.value == ["a": .string(long), "b": .string(long), "c": .string(long)])
    }

    @Test("include objects reads values totalling more than the bound, uncharged")
    func objectsOutsideTheBound() throws {
        // A bound of 160 MiB: eight values of 16 MiB and 32 MiB; twelve objects of 15 MB.
        let f = try Fixture { $0.queryLengthLimit = 16 << 20 }
        let value = String(repeating: "v", count: 15_000_000)
        try f.store.write { tx in
            for i in 0..<12 { try tx.put(ref("n", "k\(i)"), value: ["blob": .string(value)]) }
        }
        let rows = try f.store.query(clause: "WHERE 1", include: .objects)
        #expect(rows.count == 12)
        #expect(rows.allSatisfy { $0.value == ["blob": .string(value)] })
        // Only the rows' statement was charged (its pages and compile): no value of 15 MB.
        let peak = f.store.queries.idleMemoryPeaks.max() ?? 0
        #expect(peak > 0 && peak < 15_000_000, "peak \(peak)")
    }

    @Test("SQLite started with the counting allocator: no open warning, queries run")
    func allocatorInstalled() throws {
        let f = try Self.fixture()
        #expect(QueryConnection.unboundedMemory == nil)
        #expect(!f.store.openWarnings.contains { $0.contains("allocator") }, "\(f.store.openWarnings)")
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(0))
    }

    @Test("a length limit whose bound would overflow gives the largest bound, not a wrapped one")
    func boundOverflow() {
        #expect(QueryConnection.memoryBound(lengthLimit: .max / 8) == .max)
        #expect(QueryConnection.memoryBound(lengthLimit: .max) == .max)
        #expect(QueryConnection.memoryBound(lengthLimit: 16 << 20) == 160 << 20)
    }
}
