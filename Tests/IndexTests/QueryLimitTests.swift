// Bounds on what a client's clause may cost (control.query_time_limit, assetd.toml(5),
// [control]): a runaway query is stopped after the configured time, refused as query_rejected,
// and the connection keeps working.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct QueryLimitTests {
    @Test("a query running past queryTimeLimit is stopped with query_rejected and the next query works")
    func runawayQueryStopped() throws {
        let f = try Fixture { $0.queryTimeLimit = 0.2 }
        try f.store.write { tx in
            for i in 0..<2000 { try tx.put(ref("m", "k\(i)"), value: ["n": .int(Int64(i))]) }
        }
        let started = ContinuousClock.now
        let e = expectCode(.queryRejected) {
            try f.store.aggregate(function: "COUNT(*)", clause: ", index_default a, index_default b")
        }
        // The aggregate's clause must be WHERE…; a cross join through a subquery is the same cost.
        let e2 = expectCode(.queryRejected) {
            try f.store.query(
                clause: ", index_default a, index_default b WHERE a.size + b.size + index_default.size = -1")
        }
        #expect(e != nil)
        #expect(e2?.message.contains("longer than") == true, "\(String(describing: e2))")
        // Stopped by the configured 0.2 s, not the 30 s default: a bound on the limit in effect,
        // with room for any load, not on speed.
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(2000))
    }

    @Test("an aggregate takes only a WHERE clause")
    func aggregateClauseIsWhere() throws {
        let f = try Fixture()
        for clause in ["ORDER BY size", "LIMIT 1", "GROUP BY owner", "WHEREVER"] {
            #expect(
                expectCode(.queryRejected) { try f.store.aggregate(function: "COUNT(*)", clause: clause) } != nil,
                "\(clause)")
        }
        #expect(try f.store.aggregate(function: "COUNT(*)", clause: "  where size >= 0") == .value(0))
    }

    /// Values longer than the query connection's limit (64 MiB), through printf and format,
    /// whose SQLite versions give NULL there, and through functions that report it.
    static let tooBig: [(String, String)] = [
        ("length(printf('%.*c', 70000000, 'x'))", ""),
        ("length(format('%.*c', 70000000, 'x'))", ""),
        ("COUNT(*)", "WHERE length(printf('%.*c', 70000000, 'x')) > 0"),
        ("COUNT(*)", "WHERE printf('%s%s', printf('%.*c', 40000000, 'x'), printf('%.*c', 40000000, 'y')) IS NULL"),
        ("length(replace(printf('%.*c', 40000000, 'x'), 'x', 'yy'))", ""),
    ]

    @Test("a value SQLite cannot build within the limit is reply_too_large, not null", arguments: tooBig)
    func valueTooBig(_ function: String, _ clause: String) throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        let e = expectCode(.replyTooLarge) { try f.store.aggregate(function: function, clause: clause) }
        #expect(e?.message.contains("larger than the reply limit") == true, "\(String(describing: e))")
        if !clause.isEmpty {
            #expect(expectCode(.replyTooLarge) { try f.store.query(clause: clause) } != nil)
        }
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(1))
    }

    @Test("printf and format still format, and give null for a null format, as SQLite's do")
    func printfStillFormats() throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        #expect(try f.store.aggregate(function: "printf('%d-%s-%.2f', 5, key, 1.5)") == .value("5-a-1.50"))
        #expect(try f.store.aggregate(function: "format('%5s|%-3d|', 'ab', 7)") == .value("   ab|7  |"))
        #expect(try f.store.aggregate(function: "printf(NULL, 1)") == .value(.null))
        #expect(try f.store.aggregate(function: "length(printf('%.*c', 1000000, 'x'))") == .value(1_000_000))
        #expect(try f.store.query(clause: "WHERE printf('%s', key) = ?", parameters: ["a"]).count == 1)
    }

    @Test("an aggregate's grouped rows count against the reply limit as a query's do")
    func groupedAggregateReplyLimit() throws {
        let f = try Fixture()
        try f.store.write { tx in
            for i in 0..<10 { try tx.put(ref("m", "k\(i)"), value: [:]) }
        }
        // Ten rows of a megabyte each against 4 MiB: stopped at the fifth row, not built.
        #expect(
            expectCode(.replyTooLarge) {
                try f.store.aggregate(function: "printf('%.*c', 1000000, 'x')", groupBy: ["key"], replyLimit: 4 << 20)
            } != nil)
        let small = try f.store.aggregate(
            function: "printf('%.*c', 100000, 'x')", groupBy: ["key"], replyLimit: 4 << 20)
        guard case .rows(let rows) = small else { throw StoreError(.internalError, "no rows: \(small)") }
        #expect(rows.count == 10)
        #expect(
            expectCode(.replyTooLarge) {
                try f.store.aggregate(function: "printf('%.*c', 100, 'x')", replyLimit: 50)
            } != nil)
    }

    /// `n` sums of distinct aggregate calls, each of which keeps its own accumulator.
    static func aggregateTerms(_ n: Int) -> String {
        (0..<n).map { "length(group_concat(printf('%.*c', 10, '\($0 % 10)') || '\($0)'))" }.joined(separator: " + ")
    }

    @Test("a clause with more than 16 aggregate, min or max calls is query_rejected; up to 16 run")
    func aggregateCallsBounded() throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        let e = expectCode(.queryRejected) { try f.store.aggregate(function: Self.aggregateTerms(20)) }
        #expect(e?.message.contains("more than 16 aggregate") == true, "\(String(describing: e))")
        #expect(expectCode(.queryRejected) { try f.store.aggregate(function: Self.aggregateTerms(17)) } != nil)
        #expect(
            expectCode(.queryRejected) {
                try f.store.query(clause: "WHERE size < (SELECT \(Self.aggregateTerms(64)) FROM index_default)")
            } != nil)
        #expect(try f.store.aggregate(function: Self.aggregateTerms(3)) == .value(33))
        #expect(try f.store.aggregate(function: Self.aggregateTerms(16), groupBy: ["key"]) != .value(.null))
        #expect(try f.store.aggregate(function: Self.aggregateTerms(16)) == .value(182))
    }

    @Test("a clause with more than 64 function calls is query_rejected; 64 run")
    func functionCallsBounded() throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        let calls = { (n: Int) in (0..<n).map { "abs(\($0))" }.joined(separator: " + ") }
        let e = expectCode(.queryRejected) { try f.store.aggregate(function: "max(\(calls(64)))") }
        #expect(e?.message.contains("more than 64 function calls") == true, "\(String(describing: e))")
        #expect(try f.store.aggregate(function: "max(\(calls(63)))") == .value(.int(Int64((0..<63).reduce(0, +)))))
    }

    @Test("a checked function call ends a query past its time, between two checks of the progress handler")
    func checkedCallStopsExpiredQuery() throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        // One row, a few dozen steps: the progress handler (every 1,000) never runs; the
        // call sees the cancellation itself.
        let stopped = QueryCancellation()
        stopped.cancel()
        for function in [
            "max(instr('abc', 'b'))", "max(replace('abc', 'b', 'x'))", "max(trim('abc', 'a'))",
            "max('abc' LIKE '%b%')", "max(printf('%d', 1))",
        ] {
            let e = expectCode(.queryRejected) { try f.store.aggregate(function: function, cancellation: stopped) }
            #expect(e?.message.contains("was stopped") == true, "\(function): \(String(describing: e))")
        }
        #expect(try f.store.aggregate(function: "max(instr('abc', 'b'))") == .value(2))
    }
}
