// One function call in a client's clause is bounded (assetd(8), Index queries): the time limit is
// checked only between a statement's steps, so instr and replace search in linear time, and
// trim, ltrim, rtrim, LIKE and GLOB refuse inputs whose lengths multiplied pass a budget. Where
// they run they answer as SQLite's own do.

import AssetStore
import AssetStoreTestSupport
import GRDB
import Testing

@Suite struct QueryFunctionWorkTests {
    /// Expressions whose value on query connections must be SQLite's own.
    static let cases = [
        "instr('abc', 'b')", "instr('abc', '')", "instr('', '')", "instr('', 'a')", "instr(NULL, 'a')",
        "instr('a', NULL)", "instr('héllo wörld', 'ö')", "instr('héllo', 'l')", "instr(x'616263', x'63')",
        "instr(x'616263', 'c')", "instr('abc', x'63')", "instr(12345, 34)", "instr(1.5, '.')", "instr('aaa', 'aaaa')",
        "instr('ab' || char(0) || 'cd', 'cd')", "instr('日本語テキスト', 'テ')", "instr('日本', CAST(x'97a5' AS TEXT))",
        "instr(CAST(x'97a5e6' AS TEXT), CAST(x'97a5' AS TEXT))", "instr(x'0001', x'01')", "instr('abab', 'bab')",
        "replace('abcabc', 'b', 'xy')", "replace('aaa', 'aa', 'b')", "replace('abc', '', 'x')",
        "replace(NULL, 'a', 'b')", "replace('abc', NULL, 'b')", "replace('abc', 'b', NULL)", "replace(123, 2, 9)",
        "replace('héllo', 'é', 'e')", "replace('abc', char(0), 'x')", "replace(x'616263', 'b', 'z')",
        "replace('abc', 'abcd', 'x')", "replace('aXbX', 'X', '')", "replace('', 'a', 'b')", "replace(1.5, '.', ',')",
        "trim('  xx  ')", "trim('xxhixx', 'x')", "ltrim('xyxhi', 'xy')", "rtrim('hiyxy', 'xy')", "trim('ähä', 'ä')",
        "trim(NULL, 'a')", "trim('a', NULL)", "trim(123, '1')", "trim('aaa', '')", "ltrim(x'616263', 'a')",
        "like('a%', 'ABC')", "'abc' LIKE 'A_C'", "'ä' LIKE 'Ä'", "'a%c' LIKE 'a\\%c' ESCAPE '\\'", "like('%', NULL)",
        "NULL LIKE 'a'", "'abc' NOT LIKE 'abd'", "like('a_c', 'abc', 'x')", "like('ax%', 'a%', 'x')",
        "'abc' GLOB 'a*'", "'abc' GLOB '[a-c]b?'", "'Abc' GLOB 'a*'", "'a]' GLOB '*[]]'", "'x' GLOB '[^a-c]'",
        "glob('*é*', 'héllo')", "12 LIKE '1%'", "x'616263' LIKE 'a%'", "glob('1*', 1.5)", "rtrim(100, '0')",
        "like(x'25', 'abc')", "trim(1.5, 1)", "like(x'', 'abc')", "x'' GLOB '*'", "trim(x'', 'a')",
        "replace('abc', '', NULL)", "replace('aaaa', 'aa', 'b')",
        // A NUL byte inside a pattern or a searched-for text.
        "('ab' || char(0) || 'cd') LIKE ('ab' || char(0) || '%')",
        "('ab' || char(0) || 'cd') LIKE ('ab' || char(0) || 'x%')",
        "glob('a' || char(0) || '*', 'a' || char(0) || 'b')", "glob('a' || char(0) || 'c', 'a' || char(0) || 'b')",
        "instr('ab' || char(0) || 'cd', 'b' || char(0) || 'c')",
        "replace('ab' || char(0) || 'cd', 'b' || char(0), 'x')",
        "trim(char(0) || 'a' || char(0), char(0))",
    ]

    /// Past the work budget as text, but SQLite's LIKE and GLOB answer a blob at once when
    /// built with SQLITE_LIKE_DOESNT_MATCH_BLOBS (the cases are left out without it).
    static let blobCases = [
        "CAST(printf('%.*c', 16000000, 'a') AS BLOB) LIKE '%' || printf('%.*c', 9000, 'a') || 'b'",
        "glob(CAST(printf('%.*c', 9000, '*') AS BLOB), printf('%.*c', 16000000, 'a'))",
        "like(printf('%.*c', 9000, '%'), CAST(printf('%.*c', 16000000, 'a') AS BLOB), 'too long an escape')",
    ]

    static let likeDoesntMatchBlobs =
        (try? DatabaseQueue().read {
            try Bool.fetchOne($0, sql: "SELECT sqlite_compileoption_used('LIKE_DOESNT_MATCH_BLOBS')")
        }) == true

    @Test(
        "LIKE and GLOB with a blob past the work budget answer as SQLite's own",
        .enabled(if: likeDoesntMatchBlobs), arguments: blobCases)
    func blobSameAsSQLite(_ expression: String) throws {
        try sameAsSQLite(expression)
    }

    @Test("instr, replace, trim, LIKE and GLOB answer as SQLite's own", arguments: cases)
    func sameAsSQLite(_ expression: String) throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        let shown = "typeof(\(expression)) || ':' || hex(\(expression))"
        let expected = try DatabaseQueue().read { try String.fetchOne($0, sql: "SELECT \(shown)") }
        #expect(try f.store.aggregate(function: shown) == .value(.string(expected ?? "")))
    }

    /// Calls SQLite's own version of which takes the better part of an hour in one step.
    static let long: [(String, Int64)] = [
        ("instr(printf('%.*c', 16000000, 'a'), printf('%.*c%s', 8000000, 'a', 'b'))", 0),
        ("instr(printf('%.*c', 16000000, 'a'), printf('%.*c', 8000000, 'a'))", 1),
        ("instr(printf('%.*c%s', 16000000, 'a', 'é'), printf('%.*c%s', 8000000, 'a', 'é'))", 8_000_001),
        ("length(replace(printf('%.*c', 16000000, 'a'), printf('%.*c%s', 8000000, 'a', 'b'), 'x'))", 16_000_000),
        ("length(replace(printf('%.*c', 16000000, 'a'), printf('%.*c', 4000000, 'a'), 'xy'))", 8),
    ]

    @Test("instr and replace on values of many megabytes answer in linear time", arguments: long)
    func linearSearch(_ function: String, _ value: Int64) throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        #expect(try f.store.aggregate(function: function) == .value(.int(value)))
    }

    /// Calls past the work budget: the first three take SQLite's own a few tenths of a second
    /// (its answer, not a refusal, is what they got before); the rest would take it hours.
    static let tooMuch: [(String, String)] = [
        ("length(trim(printf('%.*c', 1000000, 'a'), printf('%.*c%s', 200, 'b', 'a')))", ""),
        ("COUNT(*)", "WHERE printf('%.*c', 1000000, 'a') LIKE '%' || printf('%.*c', 199, 'a') || 'b'"),
        ("COUNT(*)", "WHERE printf('%.*c', 1000000, 'a') GLOB '*' || printf('%.*c', 199, 'a') || 'b'"),
        ("length(rtrim(printf('%.*c', 16000000, 'a'), printf('%.*c%s', 8000000, 'b', 'a')))", ""),
        ("length(ltrim(printf('%.*c', 16000000, 'a'), printf('%.*c%s', 8000000, 'b', 'a')))", ""),
        ("COUNT(*)", "WHERE printf('%.*c', 16000000, 'a') LIKE '%' || printf('%.*c', 9000, 'a') || 'b'"),
    ]

    @Test("trim, LIKE and GLOB with too much work for one call are query_rejected", arguments: tooMuch)
    func workRefused(_ function: String, _ clause: String) throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        let e = expectCode(.queryRejected) { try f.store.aggregate(function: function, clause: clause) }
        #expect(e?.message.contains("too much work in one call of") == true, "\(String(describing: e))")
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(1))
    }

    @Test("within the budget long inputs still run, and a long LIKE pattern is refused as SQLite refuses it")
    func withinBudget() throws {
        let f = try Fixture()
        try f.store.write { tx in try tx.put(ref("m", "a"), value: [:]) }
        #expect(try f.store.aggregate(function: "length(trim(printf('%.*c', 1000000, 'a'), 'ab'))") == .value(0))
        #expect(
            try f.store.aggregate(function: "COUNT(*)", clause: "WHERE printf('%.*c%s', 1000000, 'a', 'x') LIKE '%x%'")
                == .value(1))
        let e = expectCode(.queryRejected) {
            try f.store.aggregate(function: "COUNT(*)", clause: "WHERE key LIKE printf('%.*c', 20000, '%')")
        }
        #expect(e?.message.contains("pattern too complex") == true, "\(String(describing: e))")
    }
}
