// The fast point read behind object.get prints exactly what the general path prints, and the
// loop's PointReader, which keeps one snapshot across reads, never misses a finished commit.

import Foundation
import Synchronization
import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct PointReadTests {
    @Test("objectJSON equals get(ref).json serialised, byte for byte, for varied objects")
    func sameBytesAsGeneralPath() throws {
        let f = try Fixture()
        let a = try f.makeFile("p/a", size: 123)
        let b = try f.makeFile("p/é b", size: 7)
        let missing = f.root + "/p/not-yet"
        try f.store.write { tx in
            try tx.put(ref("c", "plain"), value: [:])
            try tx.put(
                ref("c", "files"), value: ["file": [.string(b), .string(a), .string(missing)], "n": 1.5],
                metadata: ["m": [1, "two", nil]], owner: "ölaf")
            try tx.put(
                ref("ü nicode \"q\"", "k\n\t"), value: ["deep": ["a": ["b": [true, false, 9_007_199_254_740_993]]]])
            try tx.put(ref("c", "scalar"), value: "just a string")
            // Over the bytes a reply's cursor takes inline: appended straight.
            try tx.put(
                ref("c", "large"), value: ["blob": .string(String(repeating: "x", count: 20_000))],
                metadata: ["m": "\u{1}"], owner: "a\"b\\c\u{1}")
        }
        // Around the bytes a reply's cursor takes inline (value, metadata and owner together),
        // holding a file; and an owner whose every byte is escaped to six.
        let threshold = (16_384 - 48)...(16_384 + 8)
        try f.store.write { tx in
            for n in threshold {
                try tx.put(
                    ref("edge", "\(n)"),
                    value: ["file": .string(a), "blob": .string(String(repeating: "y", count: n - 40))],
                    owner: "o")
            }
            try tx.put(ref("c", "escaped owner"), value: [:], owner: String(repeating: "\u{1}", count: 20_000))
            try tx.put(ref("c", "small, escaped owner"), value: [:], owner: "a\"b\\c\u{1}")
        }
        // The objects fall on both sides: the value's text and the owner's byte are what count.
        let counted = threshold.map { n in
            JSONValue.object(["file": .string(a), "blob": .string(String(repeating: "y", count: n - 40))])
                .serialized().utf8.count + 1
        }
        #expect(counted.contains { $0 <= 16_384 } && counted.contains { $0 > 16_384 }, "\(counted)")
        f.clock.advance(0.123456789)
        try f.store.write { try $0.touch(ref("c", "files")) }
        let refs =
            [
                ref("c", "plain"), ref("c", "files"), ref("ü nicode \"q\"", "k\n\t"), ref("c", "scalar"),
                ref("c", "large"),
                ref("c", "escaped owner"), ref("c", "small, escaped owner"),
            ] + threshold.map { ref("edge", "\($0)") }
        for r in refs {
            let general = try #require(try f.store.read { try $0.get(r) }).json.serialized()
            let fast = try #require(try f.store.objectJSON(r))
            #expect(String(decoding: fast, as: UTF8.self) == general, "\(r)")
            #expect(try f.store.get(r) == f.store.read { try $0.get(r) }, "Store.get of \(r)")
        }
        #expect(try f.store.objectJSON(ref("c", "absent")) == nil)
        #expect(try f.store.get(ref("c", "absent")) == nil)
    }

    @Test("512 point reads appended to one buffer reallocate it a few times, not once each")
    func appendedReadsGrowTheBufferGeometrically() throws {
        // A session renders pipelined gets into one output buffer; room reserved exactly per
        // reply copied every reply already there, each time.
        let f = try Fixture()
        let big = String(repeating: "v", count: 8000)
        try f.store.write { try $0.put(ref("c", "big"), value: ["v": .string(big)]) }
        var out = [UInt8]()
        var regrowths = 0
        for _ in 0..<512 {
            let capacity = out.capacity
            #expect(try f.store.appendObjectJSON(ref("c", "big"), touching: .no, to: &out))
            if out.capacity != capacity { regrowths += 1 }
        }
        #expect(out.count > 512 * 8000)
        #expect(regrowths <= 16, "\(regrowths) reallocations")
    }

    @Test("a reply reserves about its own size: a long owner is not reserved six times over")
    func longOwnerReservesItsSize() throws {
        let f = try Fixture()
        try f.store.write { try $0.put(ref("c", "k"), value: [:], owner: String(repeating: "x", count: 100_000)) }
        var out = [UInt8]()
        #expect(try f.store.appendObjectJSON(ref("c", "k"), touching: .no, to: &out))
        #expect(out.count > 100_000)
        #expect(out.capacity < 2 * out.count, "capacity \(out.capacity) for a reply of \(out.count)")
    }

    @Test("an object's files are listed once each, in SQLite's byte order of their paths, by both reads")
    func filesOrderedOnce() throws {
        let f = try Fixture()
        // Byte order differs from plain alphabetical order (capitals first, a decomposed é
        // sorts by its 'e'), and one file is held through two edges.
        let names = ["p/b", "p/B", "p/a", "p/é", "p/e\u{301}x", "p/Z", "p/aa"]
        let paths = try names.map { try f.makeFile($0, size: 3) }
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: ["file": .array(paths.map { .string($0) })])
            try tx.addEdge(name: "also", source: ref("c", "k"), destination: .file(paths[0]), rules: [])
        }
        let q = try DatabaseQueue(path: f.dbPath)
        let expected = try q.read { db in
            try String.fetchAll(
                db, sql: "SELECT path FROM file WHERE id IN (SELECT dst FROM edge WHERE is_file = 1) ORDER BY path")
        }
        #expect(expected.count == names.count)
        let general = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(general.files.map(\.path) == expected)
        #expect(try f.store.get(ref("c", "k")) == general)
        let fast = try JSONValue.parse(
            String(decoding: try #require(try f.store.objectJSON(ref("c", "k"))), as: UTF8.self))
        #expect(fast["files"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == expected)
        #expect(
            String(decoding: try #require(try f.store.objectJSON(ref("c", "k"))), as: UTF8.self)
                == general.json.serialized())
    }

    @Test("objectJSON sees each commit: a fresh snapshot per read")
    func seesCommits() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        #expect(
            try f.store.objectJSON(ref("c", "k")).map { String(decoding: $0, as: UTF8.self) }?.contains("\"value\":1")
                == true)
        try f.put([(ref("c", "k"), 2)])
        #expect(
            try f.store.objectJSON(ref("c", "k")).map { String(decoding: $0, as: UTF8.self) }?.contains("\"value\":2")
                == true)
        try f.delete(ref("c", "k"))
        #expect(try f.store.objectJSON(ref("c", "k")) == nil)
    }

    @Test("objectJSON reads an object over the query length limit, and queries keep the limit")
    func objectOverQueryLengthLimit() throws {
        let f = try Fixture { $0.queryLengthLimit = 4096 }
        let value: JSONValue = ["blob": .string(String(repeating: "x", count: 10_000))]
        try f.put([(ref("c", "k"), value)])
        let text = try #require(try f.store.objectJSON(ref("c", "k")))
        let general = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(String(decoding: text, as: UTF8.self) == general.json.serialized())
        #expect(try f.store.get(ref("c", "k")) == general)
        // The same pooled connection, back under the clients' limit.
        func doubled(_ n: Int) -> String { "length(replace(printf('%.*c', \(n), 'x'), 'x', 'yy'))" }
        #expect(expectCode(.replyTooLarge) { try f.store.aggregate(function: doubled(3000)) } != nil)
        #expect(try f.store.aggregate(function: doubled(1000)) == .value(2000))
    }

    @Test("Store.get counts a touch not yet written, as objectJSON does, and sees each commit")
    func getSeesPendingTouchAndCommits() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        let stored = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        f.clock.advance(5)
        try f.store.touch(ref("c", "k"))
        let got = try #require(try f.store.get(ref("c", "k")))
        #expect(got.accessed == f.clock.now && got.accessed > stored.accessed)
        #expect(try f.store.read { try $0.get(ref("c", "k")) }?.accessed == stored.accessed, "not written yet")
        let json = try JSONValue.parse(
            String(decoding: try #require(try f.store.objectJSON(ref("c", "k"))), as: UTF8.self))
        #expect(json["accessed"]?.doubleValue == got.accessed)
        try f.put([(ref("c", "k"), 2)])
        #expect(try f.store.get(ref("c", "k"))?.value == 2)
        try f.delete(ref("c", "k"))
        #expect(try f.store.get(ref("c", "k")) == nil)
    }

    @Test("a PointReader prints the same bytes as objectJSON")
    func readerSameBytes() throws {
        let f = try Fixture()
        let a = try f.makeFile("p/a", size: 5)
        try f.store.write { tx in
            try tx.put(ref("c", "plain"), value: [:])
            try tx.put(ref("c", "files"), value: ["file": .string(a)], metadata: ["m": 1], owner: "o")
        }
        let reader = try PointReader(store: f.store)
        for r in [ref("c", "plain"), ref("c", "files"), ref("c", "files")] {
            #expect(try reader.objectJSON(r) == f.store.objectJSON(r))
        }
        #expect(try reader.objectJSON(ref("c", "absent")) == nil)
    }

    @Test("a touching read: a refused check records nothing, a passed one records the time, a missing object none")
    func touchingReadsRecordOnlyWhatTheyMay() throws {
        struct Refused: Error {}
        let f = try Fixture()
        let k = ref("c", "k")
        try f.store.write { try $0.put(k, value: [:], owner: "ölaf") }
        f.clock.advance(10)
        let reader = try PointReader(store: f.store)
        for reads in [f.store, reader] as [any PointReads] {
            let seen = Mutex<[String]>([])
            #expect(throws: Refused.self) {
                _ = try reads.objectJSON(
                    k,
                    touching: .checked { owner in
                        seen.withLock { $0.append(owner) }
                        throw Refused()
                    })
            }
            #expect(seen.withLock { $0 } == ["ölaf"], "the check sees the stored owner")
            #expect(f.store.pendingAccessCount == 0, "a refused read records no access")
            #expect(try reads.objectJSON(ref("c", "absent"), touching: .yes) == nil)
            #expect(f.store.pendingAccessCount == 0, "a missing object records no access")
            let json = try JSONValue.parse(
                String(decoding: try #require(try reads.objectJSON(k, touching: .checked { _ in })), as: UTF8.self))
            #expect(json["accessed"]?.doubleValue == f.clock.now, "a passed check records the access, and shows it")
            #expect(f.store.pendingAccessCount == 1)
            _ = try #require(try f.store.flushAccesses())
            f.clock.advance(10)
        }
    }

    @Test("files read only when the row counts some: edges added, removed and re-added show in every read")
    func filesFollowTheirEdges() throws {
        let f = try Fixture()
        let a = try f.makeFile("p/a", size: 5)
        let b = try f.makeFile("p/b", size: 6)
        let k = ref("c", "k")
        let reader = try PointReader(store: f.store)
        func paths() throws -> [String] {
            let text = try #require(try reader.objectJSON(k))
            #expect(try f.store.objectJSON(k) == text)
            #expect(String(decoding: text, as: UTF8.self) == (try f.store.get(k)?.json.serialized()))
            return try JSONValue.parse(String(decoding: text, as: UTF8.self))["files"]?.arrayValue?.compactMap {
                $0["path"]?.stringValue
            } ?? []
        }
        try f.store.write { try $0.put(k, value: ["n": 1]) }
        #expect(try paths() == [])
        try f.store.write { try $0.addEdge(name: "x", source: k, destination: .file(a), rules: []) }
        #expect(try paths() == [a])
        try f.store.write { try $0.addEdge(name: "y", source: k, destination: .file(b), rules: []) }
        #expect(try paths() == [a, b])
        try f.store.write { try $0.removeEdge(name: "x", source: k, destination: .file(a)) }
        #expect(try paths() == [b])
        try f.store.write { try $0.removeEdge(name: "y", source: k, destination: .file(b)) }
        #expect(try paths() == [])
        // A put that names a file in its value holds it through a derived edge.
        try f.store.write { try $0.put(k, value: ["file": .string(a)]) }
        #expect(try paths() == [a])
        try f.store.write { try $0.put(k, value: [:]) }
        #expect(try paths() == [])
    }

    @Test("a PointReader sees every commit that finished before the read, without ending its snapshot")
    func readerSeesCommits() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        let reader = try PointReader(store: f.store)
        func value() throws -> String? {
            try reader.objectJSON(ref("c", "k")).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(try value()?.contains("\"value\":1") == true)
        #expect(try reader.objectJSON(ref("c", "new")) == nil)
        try f.put([(ref("c", "k"), 2), (ref("c", "new"), 3)])
        #expect(try value()?.contains("\"value\":2") == true)
        #expect(try reader.objectJSON(ref("c", "new")) != nil)
        try f.delete(ref("c", "k"))
        #expect(try value() == nil)
    }

    @Test("after endSnapshot a PointReader no longer holds the WAL: a truncating checkpoint empties it")
    func readerReleasesWAL() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        let reader = try PointReader(store: f.store)
        _ = try reader.objectJSON(ref("c", "k"))
        try f.put([(ref("c", "other"), 2)])
        _ = try reader.objectJSON(ref("c", "k"))  // a snapshot newer than the last commit, still open
        reader.endSnapshot()
        try f.store.checkpoint()
        let wal = try FileManager.default.attributesOfItem(atPath: f.store.path + "-wal")[.size] as? Int
        #expect(wal == 0)
    }
}
