// The per-owner LRU index is kept only while a policy needs it (Store+OwnerLRU.swift): each
// put from many owners pays for it, so a store without quotas does without, and a run that
// walks one owner's LRU order builds it first rather than sorting the owner's objects.

@testable import AssetStore
import AssetStoreTestSupport
import Testing

private func quotas(_ owner: String = "alice", _ maxBytes: Int64 = 150) -> PolicyConfiguration {
    var p = PolicyConfiguration()
    p.quotas = [.init(owner: owner, maxBytes: maxBytes)]
    p.minAge = 0
    return p
}

@Suite("Per-owner LRU index")
struct OwnerLRUIndexTests {
    @Test("without a quota the store keeps no per-owner LRU index; with one it is built at open")
    func followsTheConfiguredQuotas() throws {
        let f = try Fixture()
        #expect(try !f.store.hasOwnerLRUIndex)
        try f.put([(ref("c", "a"), ["n": .int(1)])], owner: "alice")
        f.configuration.policy = quotas()
        try f.reopen()
        #expect(try f.store.hasOwnerLRUIndex)
        // A configuration without quotas drops it again; a policy without quotas too.
        f.configuration.policy = PolicyConfiguration()
        try f.reopen()
        #expect(try !f.store.hasOwnerLRUIndex)
        #expect(try f.store.read { try $0.exists(ref("c", "a")) })
    }

    @Test("a quota added while open (a reload) builds the index before its first run, and is enforced LRU first")
    func quotaAddedByReload() throws {
        let f = try Fixture()
        for i in 0..<4 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: 100))])], owner: "alice")
            f.clock.advance(1)
        }
        f.store.policy = quotas("alice", 250)
        #expect(try !f.store.hasOwnerLRUIndex)
        let plan = try f.store.enforce()
        #expect(try f.store.hasOwnerLRUIndex)
        #expect(plan.objects.map(\.ref) == [ref("c", "k0"), ref("c", "k1")])
    }

    @Test("an eviction by owner builds the index, in a commit of its own even for a dry run")
    func evictionByOwner() throws {
        let f = try Fixture()
        for i in 0..<3 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: 100))])], owner: i == 1 ? "bob" : "alice")
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        // Evicting from everyone walks the global LRU order: no per-owner index.
        _ = try f.store.evict(bytes: 1, owner: nil, dryRun: true)
        #expect(try !f.store.hasOwnerLRUIndex)
        let plan = try f.store.evict(bytes: nil, owner: "alice", dryRun: true)
        #expect(plan.objects.map(\.ref) == [ref("c", "k0"), ref("c", "k2")])
        #expect(try f.store.hasOwnerLRUIndex)
        #expect(try f.store.read { try $0.objectCount() } == 3)
    }
}
