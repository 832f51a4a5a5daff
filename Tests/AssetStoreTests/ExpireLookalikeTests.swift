// `expire` without a duration runs the TTLs configured for the collection named, compared by the
// bytes of its name as SQLite compares them: a TTL for `cafe` + U+0301 is not one for `caf` +
// U+00E9, which String's equality takes for the same, else it deleted objects of a collection
// the caller did not name.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite("expire picks TTLs by the collection's bytes")
struct ExpireLookalikeTests {
    @Test("a TTL of a look-alike collection is not the named one's")
    func lookalikeTTL() throws {
        let (composed, decomposed) = ("caf\u{e9}", "cafe\u{301}")
        #expect(composed == decomposed && composed.utf8.count != decomposed.utf8.count)
        var p = PolicyConfiguration()
        p.ttls = [.init(collection: decomposed, maxAge: 60)]
        let f = try Fixture { $0.policy = p }
        try f.put([(ref(decomposed, "d"), ["n": 1]), (ref(composed, "c"), ["n": 2])])
        f.clock.advance(3600)
        let refused = expectCode(.invalidParams) {
            try f.store.expire(collection: composed, olderThan: nil, idle: nil)
        }
        #expect(refused?.message.contains("no ttl is configured") == true)
        #expect(try f.exists(ref(decomposed, "d")) && f.exists(ref(composed, "c")))
        // The TTL's own collection, named by its bytes, still expires.
        let plan = try f.store.expire(collection: decomposed, olderThan: nil, idle: nil)
        #expect(plan.objects.map(\.ref) == [ref(decomposed, "d")])
        #expect(try !f.exists(ref(decomposed, "d")) && f.exists(ref(composed, "c")))
    }
}
