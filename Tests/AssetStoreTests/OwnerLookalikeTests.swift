// Quotas and stats tell owners apart by the bytes of their names, as SQLite does: two owners
// whose names are only canonically equivalent (`cafe` + U+0301 against `caf` + U+00E9), which
// String's equality takes for one, each have their own usage. Else one's bytes were counted
// against the other's quota, and the other's objects evicted for them, and stats summed them.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite("quotas and stats compare owner names as bytes")
struct OwnerLookalikeTests {
    private let bob = "caf\u{e9}"
    private let eve = "cafe\u{301}"

    @Test("a look-alike owner's bytes count against its own quota, not another's")
    func quotas() throws {
        #expect(bob == eve && bob.utf8.count != eve.utf8.count)
        var p = PolicyConfiguration()
        p.order = .lru
        // Eve holds 100 bytes (quota 150), Bob 300 (quota 1000): both within.
        p.quotas = [.init(owner: eve, maxBytes: 150), .init(owner: bob, maxBytes: 1000)]
        let f = try Fixture { $0.policy = p }
        let e = try f.makeFile("eve.bin", size: 100)
        try f.put([(ref("e", "e0"), ["file": .string(e)])], owner: eve)
        for i in 0..<3 {
            let path = try f.makeFile("bob\(i).bin", size: 100)
            try f.put([(ref("b", "b\(i)"), ["file": .string(path)])], owner: bob)
        }
        f.clock.advance(3600)
        #expect(try f.store.enforce(dryRun: true).objects.isEmpty)
        // Bob past his quota loses his own objects only, and his usage falls as they go.
        p.quotas = [.init(owner: eve, maxBytes: 150), .init(owner: bob, maxBytes: 150)]
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref) == [ref("b", "b0"), ref("b", "b1")])
        #expect(try f.exists(ref("e", "e0")))
    }

    @Test("stats reports look-alike owners apart, and leaves them out of the map by name")
    func statistics() throws {
        let f = try Fixture { _ in }
        for (owner, key, size) in [(eve, "e0", 100), (bob, "b0", 300), ("alice", "a0", 50)] {
            let path = try f.makeFile("\(key).bin", size: size)
            try f.put([(ref("c", key), ["file": .string(path)])], owner: owner)
        }
        let s = try f.store.statistics()
        // By the names' bytes: "cafe" + U+0301 (65 CC 81) before "caf" + U+00E9 (C3 A9).
        #expect(s.owners.map(\.owner.utf8).map(Array.init) == ["alice", eve, bob].map { Array($0.utf8) })
        #expect(s.owners.map(\.bytes) == [50, 100, 300])
        #expect(s.bytesPerOwner == ["alice": 50])
        let owners = try #require(s.json["owners"]?.arrayValue)
        #expect(owners.compactMap { $0["owner"]?.stringValue?.utf8.count } == [5, 6, 5])
        #expect(owners.compactMap { $0["bytes"]?.intValue } == [50, 100, 300])
        #expect(s.json["bytes_per_owner"] == ["alice": 50])
    }
}
