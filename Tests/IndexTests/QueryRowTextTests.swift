// A query's rows read their texts as `String(decoding:)` would, short ones through the inline
// initializer (QueryText.swift), and a long result keeps every row in order.

import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct QueryRowTextTests {
    @Test("texts of up to 40 bytes, well-formed or not, read as String(decoding:) reads them")
    func textsAsDecoded() {
        var rng = SystemRandomNumberGenerator()
        var cases: [[UInt8]] = [
            [], [0x61], [0xFF], [0xC3], [0xC3, 0xA9], [0xE2, 0x84, 0xAA], [0xED, 0xA0, 0x80], [0],
        ]
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &rng)
            // Mostly ASCII with some high bytes, so valid and ill-formed sequences both occur.
            cases.append(
                (0..<count).map { _ in
                    Bool.random(using: &rng)
                        ? UInt8.random(in: 0x20...0x7E, using: &rng) : UInt8.random(in: 0...255, using: &rng)
                })
        }
        for bytes in cases {
            let made = bytes.withUnsafeBufferPointer { QueryText.string($0) }
            let checked = bytes.withUnsafeBufferPointer { QueryText.checked($0) }
            let decoded = String(decoding: bytes, as: UTF8.self)
            #expect(made == decoded && Array(made.utf8) == Array(decoded.utf8), "\(bytes)")
            #expect(checked == decoded && Array(checked.utf8) == Array(decoded.utf8), "\(bytes)")
        }
    }

    @Test("a query of more rows than first reserved returns them all, in order, keys short and long")
    func manyRowsInOrder() throws {
        let f = try Fixture()
        let keys = (0..<150).map { i in i % 3 == 0 ? "k\(i)" + String(repeating: "x", count: 20) : "k\(i)" }
        try f.store.write { tx in
            for (i, k) in keys.enumerated() {
                try tx.put(ref(i % 2 == 0 ? "c" : "collection-with-a-long-name", k), value: ["n": .int(Int64(i))])
            }
        }
        let rows = try f.store.query(clause: "ORDER BY collection, key")
        let expected = keys.enumerated().map { i, k in ref(i % 2 == 0 ? "c" : "collection-with-a-long-name", k) }
            .sorted { ($0.collection, $0.key) < ($1.collection, $1.key) }
        #expect(rows.map(\.ref) == expected)
    }
}
