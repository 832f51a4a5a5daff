// Quotas tell owners apart by the bytes of their names, as SQLite does: two owners whose names
// are only canonically equivalent (`cafe` + U+0301 against `caf` + U+00E9), which String's
// equality takes for one, each have their own usage. Else one's bytes were counted against
// the other's quota, and the other's objects evicted for them.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite("quotas compare owner names as bytes")
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
}
