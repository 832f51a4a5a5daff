// A query's short ASCII texts are made as inline strings from their words (QueryText.swift):
// read from SQLite's columns they must equal what `String(decoding:)` makes of the same bytes,
// ill-formed, with NULs, at every length around the inline limit, and when a run of equal
// texts reuses one string.

import GRDBSQLite
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct QueryInlineTextTests {
    @Test("this standard library lays out short strings as the inline path makes them, at every length")
    func layoutHolds() throws {
        try #require(QueryText.inlineLayoutHolds)
        for n in 0...15 {
            for nul in -1..<n {
                let bytes = QueryText.opaqueBytes((0..<n).map { $0 == nul ? 0 : UInt8(0x20 + $0 * 6) })
                let words = bytes.withUnsafeBufferPointer { QueryText.smallASCIIWords($0) }
                let decoded = unsafeBitCast(String(decoding: bytes, as: UTF8.self), to: (UInt64, UInt64).self)
                #expect(words.map { $0 == decoded } == true, "\(bytes)")
            }
        }
    }

    @Test("short ASCII texts made inline equal decoded ones in words, bytes, characters, hash and appending")
    func inlineStringsBehave() throws {
        try #require(QueryText.inlineLayoutHolds)
        var rng = SystemRandomNumberGenerator()
        var cases: [[UInt8]] = [[], [0], [0x61, 0, 0x62], Array("abcdefghijklmno".utf8)]
        for _ in 0..<5_000 {
            cases.append((0..<Int.random(in: 0...15, using: &rng)).map { _ in UInt8.random(in: 0...0x7F, using: &rng) })
        }
        for bytes in cases {
            guard let made = bytes.withUnsafeBufferPointer({ QueryText.smallASCII($0) }) else {
                Issue.record("\(bytes) was not made inline")
                continue
            }
            let decoded = String(decoding: bytes, as: UTF8.self)
            let words = (
                unsafeBitCast(made, to: (UInt64, UInt64).self), unsafeBitCast(decoded, to: (UInt64, UInt64).self)
            )
            #expect(words.0 == words.1, "\(bytes)")
            #expect(made == decoded && Array(made.utf8) == bytes && made.count == decoded.count, "\(bytes)")
            #expect(made.hashValue == decoded.hashValue && made + "é" == decoded + "é", "\(bytes)")
        }
        // Not ASCII, or too long for a string's two words: left to the checked initializers.
        #expect([0xC3, 0xA9].withUnsafeBufferPointer { QueryText.smallASCII($0) } == nil)
        #expect(Array(repeating: 0x61, count: 16).withUnsafeBufferPointer { QueryText.smallASCII($0) } == nil)
    }

    @Test("column texts read inline, checked and reused alike, as String(decoding:) reads their bytes")
    func columnTexts() throws {
        let f = try Fixture()
        var db: OpaquePointer?
        try #require(QueryText.inlineLayoutHolds)
        try #require(
            sqlite3_open_v2(f.dir + "/texts.sqlite", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == 0)
        defer { sqlite3_close_v2(db) }
        try #require(sqlite3_exec(db, "CREATE TABLE t(x BLOB)", nil, nil, nil) == SQLITE_OK)
        var rng = SystemRandomNumberGenerator()
        var values: [[UInt8]] = [[], [0], [0xFF], [0xC3], [0xC3, 0xA9], [0x61, 0, 0x62]]
        for n in 0...40 {
            let ascii = (0..<n).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
            // Each twice in a row (a run reuses the first), then an equal-length other.
            values += [ascii, ascii, ascii.map { $0 == 0x41 ? 0x42 : 0x41 }]
            values.append((0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        var insert: OpaquePointer?
        try #require(sqlite3_prepare_v2(db, "INSERT INTO t(x) VALUES (?)", -1, &insert, nil) == SQLITE_OK)
        for v in values {
            _ = v.withUnsafeBytes {
                sqlite3_bind_blob(
                    insert, 1, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(v.count), transient)
            }
            #expect(sqlite3_step(insert) == SQLITE_DONE)
            sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
        var select: OpaquePointer?
        try #require(
            sqlite3_prepare_v2(db, "SELECT CAST(x AS TEXT) FROM t ORDER BY rowid", -1, &select, nil) == SQLITE_OK)
        defer { sqlite3_finalize(select) }
        var previous = "", previousChecked = ""
        for v in values {
            #expect(sqlite3_step(select) == SQLITE_ROW)
            guard let select else { return }
            let decoded = String(decoding: v, as: UTF8.self)
            let read = [
                QueryText.text(select, 0, inline: true), QueryText.text(select, 0, inline: false),
                QueryText.text(select, 0, reusing: &previous, inline: true),
                QueryText.text(select, 0, reusing: &previousChecked, inline: false),
            ]
            for s in read { #expect(s == decoded && Array(s.utf8) == Array(decoded.utf8), "\(v)") }
            // The checked path alone, also for the short ASCII texts the inline path takes.
            let checked = v.withUnsafeBufferPointer { QueryText.checked($0) }
            #expect(Array(checked.utf8) == Array(decoded.utf8), "\(v)")
        }
    }

    @Test("a query's rows keep their keys: short and long, ASCII or not, in collections short and long")
    func queryRows() throws {
        let f = try Fixture()
        let collections = ["c", "ç", "collection-with-a-long-name", "collection-é-long-name"]
        let keys = (1...20).flatMap { n in [String(repeating: "k", count: n), String(repeating: "é", count: n)] }
        try f.store.write { tx in
            for (i, c) in collections.enumerated() {
                for (j, k) in keys.enumerated() { try tx.put(ref(c, k), value: ["n": .int(Int64(i * 100 + j))]) }
            }
        }
        for chosen in [collections, [collections[1], collections[2]]] {
            let rows = try f.store.query(
                clause: "WHERE collection IN (?) ORDER BY collection, key",
                parameters: [.array(chosen.map(JSONValue.string))])
            // BINARY collation: byte order.
            let want = chosen.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }.flatMap { c in
                keys.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }.map { ref(c, $0) }
            }
            #expect(rows.map(\.ref) == want)
            #expect(rows.allSatisfy { $0.columns == nil })
        }
    }
}

private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
