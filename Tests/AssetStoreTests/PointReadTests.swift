// The fast point read behind object.get prints exactly what the general path prints.

import Foundation
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
            try tx.put(ref("c", "files"), value: ["file": [.string(b), .string(a), .string(missing)], "n": 1.5],
                       metadata: ["m": [1, "two", nil]], owner: "ölaf")
            try tx.put(ref("ü nicode \"q\"", "k\n\t"), value: ["deep": ["a": ["b": [true, false, 9_007_199_254_740_993]]]])
            try tx.put(ref("c", "scalar"), value: "just a string")
        }
        f.clock.advance(0.123456789)
        try f.store.write { try $0.touch(ref("c", "files")) }
        for r in [ref("c", "plain"), ref("c", "files"), ref("ü nicode \"q\"", "k\n\t"), ref("c", "scalar")] {
            let general = try #require(try f.store.read { try $0.get(r) }).json.serialized()
            let fast = try #require(try f.store.objectJSON(r))
            #expect(String(decoding: fast, as: UTF8.self) == general, "\(r)")
        }
        #expect(try f.store.objectJSON(ref("c", "absent")) == nil)
    }

    @Test("objectJSON sees each commit: a fresh snapshot per read")
    func seesCommits() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        #expect(try f.store.objectJSON(ref("c", "k")).map { String(decoding: $0, as: UTF8.self) }?.contains("\"value\":1") == true)
        try f.put([(ref("c", "k"), 2)])
        #expect(try f.store.objectJSON(ref("c", "k")).map { String(decoding: $0, as: UTF8.self) }?.contains("\"value\":2") == true)
        try f.delete(ref("c", "k"))
        #expect(try f.store.objectJSON(ref("c", "k")) == nil)
    }
}
