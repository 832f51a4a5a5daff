// The per-owner LRU index is kept only while a policy needs it (Store+OwnerLRU.swift): each
// put from many owners pays for it, so a store without quotas does without, and a run that
// walks one owner's LRU order builds it first rather than sorting the owner's objects.

@testable import AssetStore
import AssetStoreTestSupport
import GRDB
import Synchronization
import Testing

/// Objects c/k0… holding a 100-byte file each, one second apart (k0 least recently accessed).
private func putFiles(_ f: Fixture, _ n: Int, owner: (Int) -> String = { _ in "alice" }) throws {
    for i in 0..<n {
        try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: 100))])], owner: owner(i))
        f.clock.advance(1)
    }
}

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
        // Built at open, reported as an index rebuild (the daemon logs it).
        f.store.close()
        let reported = Mutex<[String]>([])
        f.store = try Store(path: f.dbPath, configuration: f.configuration) { p in
            reported.withLock { $0.append("\(p.index) \(p.done)/\(p.total)") }
        }
        #expect(try f.store.hasOwnerLRUIndex)
        #expect(reported.withLock { $0 }.map { $0.hasPrefix("default (owner, accessed") } == [true, true])
        #expect(reported.withLock { $0 }.last?.hasSuffix(" 1/1") == true)
        // A configuration without quotas drops it again; a policy without quotas too.
        f.configuration.policy = PolicyConfiguration()
        try f.reopen()
        #expect(try !f.store.hasOwnerLRUIndex)
        #expect(try f.store.read { try $0.exists(ref("c", "a")) })
    }

    @Test("a quota added while open (a reload) builds the index before its first run, and is enforced LRU first")
    func quotaAddedByReload() throws {
        let f = try Fixture()
        try putFiles(f, 4)
        f.store.policy = quotas("alice", 250)
        #expect(try !f.store.hasOwnerLRUIndex)
        let plan = try f.store.enforce()
        #expect(try f.store.hasOwnerLRUIndex)
        #expect(plan.objects.map(\.ref) == [ref("c", "k0"), ref("c", "k1")])
    }

    @Test("an eviction by owner without a quota has the index for its run only; a dry run leaves no trace")
    func evictionByOwner() throws {
        let f = try Fixture()
        try putFiles(f, 3) { $0 == 1 ? "bob" : "alice" }
        f.clock.advance(3600)
        let schema = {
            try f.store.read { r in try String.fetchAll(r.db, sql: "SELECT name FROM sqlite_master ORDER BY name") }
        }
        let before = try schema()
        let dry = try f.store.evict(bytes: nil, owner: "alice", dryRun: true)
        #expect(dry.objects.map(\.ref) == [ref("c", "k0"), ref("c", "k2")])
        #expect(try schema() == before)
        // Seen from another connection in each real batch, before its commit.
        let seen = Mutex<[Bool]>([])
        let path = f.dbPath
        f.store.state.withLock { s in
            s.policyBatchDecided = { seen.withLock { $0.append(indexExists(path)) } }
        }
        let real = try f.store.evict(bytes: nil, owner: "alice")
        #expect(real.objects == dry.objects)
        #expect(seen.withLock { $0 } == [true])
        #expect(try !f.store.hasOwnerLRUIndex)
        #expect(try f.store.read { try $0.objectCount() } == 1)
    }

    @Test("with a quota configured an eviction by owner leaves the index in place")
    func evictionByOwnerWithQuota() throws {
        let f = try Fixture { $0.policy = quotas("alice", 1 << 40) }
        try putFiles(f, 2)
        f.clock.advance(3600)
        #expect(try f.store.evict(bytes: nil, owner: "alice").objects.count == 2)
        #expect(try f.store.hasOwnerLRUIndex)
    }

    @Test("a quota run whose index cannot be built (the disk full) still evicts, least recently accessed first")
    func fullDiskStillEvicts() throws {
        let f = try Fixture()
        try putFiles(f, 4)
        // The writer may not grow the database: the index needs new pages, the deletions do not
        // (VACUUM first: no free page left for it).
        try f.store.pool.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages)")
        }
        f.store.policy = quotas("alice", 250)
        let plan = try f.store.enforce()
        #expect(try !f.store.hasOwnerLRUIndex)
        #expect(plan.objects.map(\.ref) == [ref("c", "k0"), ref("c", "k1")])
    }

    @Test("a read-only open neither builds nor drops the index")
    func readOnlyOpen() throws {
        let f = try Fixture()
        var c = f.configuration
        c.readOnly = true
        c.policy = quotas()
        let reader = try Store(path: f.dbPath, configuration: c)
        defer { reader.close() }
        #expect(try !reader.hasOwnerLRUIndex)
        #expect(try !f.store.hasOwnerLRUIndex)
    }
}

/// Whether the committed schema has the per-owner LRU index, read on a connection of its own.
private func indexExists(_ path: String) -> Bool {
    var config = Configuration()
    config.readonly = true
    guard let q = try? DatabaseQueue(path: path, configuration: config) else { return false }
    return (try? q.read { db in try db.indexes(on: "object").contains { $0.name == IndexTable.defaultOwnerAccessed } })
        ?? false
}
