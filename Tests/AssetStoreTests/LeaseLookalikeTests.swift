// A lease protects the object it names byte for byte, as SQLite stores it: not one whose key
// is only canonically equivalent (`cafe` + U+0301 against `caf` + U+00E9), which String's
// equality takes for the same. Else Eve's lease of a key no row has, which no owner check
// refuses, kept Bob's object from expiry and eviction for as long as she renewed it.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite("leases compare object keys as bytes")
struct LeaseLookalikeTests {
    private let bobs = ref("u1001", "caf\u{e9}")
    private let lookalike = ref("u1001", "cafe\u{301}")

    /// Bob's object holding a 100-byte file, past min_age, under `policy`.
    private func fixture(_ configure: (inout PolicyConfiguration) -> Void = { _ in }) throws -> (Fixture, String) {
        var p = PolicyConfiguration()
        p.order = .lru
        configure(&p)
        let f = try Fixture { $0.policy = p }
        let path = try f.makeFile("bob.bin", size: 100)
        try f.put([(bobs, ["file": .string(path)])], owner: "bob")
        f.clock.advance(3600)
        return (f, path)
    }

    @Test("a look-alike key's lease does not keep an object from expiry; its own key's does")
    func expiry() throws {
        #expect(lookalike.key == bobs.key && lookalike.key.utf8.count != bobs.key.utf8.count)
        let (f, path) = try fixture()
        _ = try f.store.leases.acquire(objects: [lookalike], files: [], ttl: 86_400)
        #expect(try f.store.expire(collection: nil, olderThan: 0, idle: nil, dryRun: true).objects.map(\.ref) == [bobs])
        _ = try f.store.leases.acquire(objects: [bobs], files: [], ttl: 86_400)
        #expect(try f.store.expire(collection: nil, olderThan: 0, idle: nil).objects.isEmpty)
        #expect(try f.exists(bobs) && f.exists(path))
    }

    @Test("a look-alike key's lease does not keep an object from eviction, by bytes or by owner")
    func eviction() throws {
        let (f, path) = try fixture()
        _ = try f.store.leases.acquire(objects: [lookalike], files: [], ttl: 86_400)
        #expect(try f.store.evict(bytes: nil, owner: "bob", dryRun: true).objects.map(\.ref) == [bobs])
        #expect(try f.store.evict(bytes: 1, owner: nil).objects.map(\.ref) == [bobs])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a look-alike key's lease does not keep an object from its owner's quota")
    func quota() throws {
        let (f, _) = try fixture { $0.quotas = [.init(owner: "bob", maxBytes: 10)] }
        _ = try f.store.leases.acquire(objects: [lookalike], files: [], ttl: 86_400)
        #expect(try f.store.enforce(dryRun: true).objects.map(\.ref) == [bobs])
    }
}
