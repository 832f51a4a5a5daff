// The list of shared files (`file_shared`, SharedFiles.swift) follows the registry rows where
// they leave, not only at policy runs: without a `[policy]` section nothing else prunes it, and
// a client could grow it for ever (two requests an entry), each `stats` reading every entry.
// `verify` finds (and repairs) a file several rows name that is not listed.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("The list of shared files")
struct SharedListTests {
    private func listed(_ f: Fixture) throws -> Int {
        try f.store.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM file_shared") } ?? -1
    }

    /// A 1,000-byte file `a` and its hard link `b`, held by objects `c/a` and `c/b`.
    private func linkedPair(_ f: Fixture) throws -> (String, String) {
        let a = try f.makeFile("a", size: 1000)
        let b = f.root + "/b"
        #expect(link(a, b) == 0)
        try f.put([(ref("c", "a"), ["file": .string(a)]), (ref("c", "b"), ["file": .string(b)])])
        return (a, b)
    }

    @Test("with no policy, two names put and one deleted, a thousand times, leave nothing listed")
    func boundedWithoutPolicy() throws {
        let f = try Fixture()
        for i in 0..<1000 {
            let a = try f.makeFile("d\(i / 100)/a\(i)")
            let b = f.root + "/d\(i / 100)/b\(i)"
            #expect(link(a, b) == 0)
            try f.put([(ref("c", "a\(i)"), ["file": .string(a)]), (ref("c", "b\(i)"), ["file": .string(b)])])
            try f.delete(ref("c", i % 2 == 0 ? "a\(i)" : "b\(i)"))
        }
        #expect(try listed(f) == 0)
        #expect(try f.store.statistics().files == 1000)
    }

    @Test(
        "a policy run's evictions of names leave their file unlisted at the batch's commit", arguments: [true, false])
    func policyRunDrops(setBased: Bool) throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = 1500  // the target: 1350
            p.minAge = 0
            p.order = .lru
            $0.policy = p
            $0.setBasedPolicyDeletes = setBased
        }
        let a = try f.makeFile("a", size: 1000)
        let b = f.root + "/b"
        #expect(link(a, b) == 0)
        try f.put([(ref("c", "a"), ["file": .string(a)])])
        f.clock.advance(1)
        try f.put([(ref("c", "b"), ["file": .string(b)])])
        f.clock.advance(1)
        try f.put([(ref("c", "c"), ["file": .string(try f.makeFile("c", size: 1000))])])
        f.clock.advance(1)
        #expect(try listed(f) == 1)
        // Evicting a frees nothing while b names its file (the entry says so until the
        // commit), so b goes too.
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["a", "b"])
        #expect(plan.commits.count == 1)  // one batch: b was judged while a's entry stood
        #expect(try listed(f) == 0)
    }

    @Test("a name whose row goes with its last edge (no rule deletes it) leaves its file unlisted")
    func unreferencedRowDrops() throws {
        let f = try Fixture()
        let a = try f.makeFile("a", size: 1000)
        let b = f.root + "/b"
        #expect(link(a, b) == 0)
        try f.put([(ref("c", "x"), ["v": .string("")]), (ref("c", "b"), ["file": .string(b)])])
        try f.store.write { tx in
            try tx.addEdge(name: "plain", source: ref("c", "x"), destination: .file(a), rules: [])
        }
        #expect(try listed(f) == 1)
        let report = try f.delete(ref("c", "x"))
        #expect(report.filesQueued.isEmpty)  // only the row went
        #expect(try f.store.statistics().files == 1)
        #expect(try listed(f) == 0)
    }

    @Test("a name given another file leaves the first file unlisted")
    func identityChangeDrops() throws {
        let f = try Fixture()
        let (_, b) = try linkedPair(f)
        #expect(try listed(f) == 1)
        #expect(unlink(b) == 0)
        _ = try f.makeFile("b", size: 500)
        try f.put([(ref("c", "b"), ["file": .string(b), "v": .string("2")])])
        #expect(try listed(f) == 0)
        #expect(try f.store.statistics().bytes == 1500)
    }

    @Test("verify finds a file several rows name that is not listed, and its repair lists it")
    func verifyListsMissing() throws {
        let f = try Fixture()
        _ = try linkedPair(f)
        try f.store.write { tx in try tx.db.execute(sql: "DELETE FROM file_shared") }
        #expect(try f.store.statistics().bytes == 2000)  // what an incomplete list does

        let found = try f.store.verify(VerifyOptions())
        #expect(found.problems.map(\.kind) == ["unlisted_shared_file"])
        #expect(!found.clean)
        var options = VerifyOptions()
        options.repair = true
        let repaired = try f.store.verify(options)
        #expect(repaired.problems.map(\.kind) == ["unlisted_shared_file"])
        #expect(repaired.clean && repaired.repaired == 1)
        #expect(try listed(f) == 1)
        #expect(try f.store.statistics().bytes == 1000)
        #expect(try f.store.verify(VerifyOptions()).problems.isEmpty)
    }

    @Test("verify's repair of a name no edge holds any more leaves its file unlisted")
    func verifyRepairDrops() throws {
        let f = try Fixture()
        let (_, b) = try linkedPair(f)
        #expect(try listed(f) == 1)
        try f.store.write { tx in
            try tx.db.execute(
                sql: "DELETE FROM edge WHERE is_file = 1 AND dst = (SELECT id FROM file WHERE path = ?)",
                arguments: [b])
        }
        var options = VerifyOptions()
        options.repair = true
        let repaired = try f.store.verify(options)
        // b's object still indexes the file field its edge held: found and repaired too.
        #expect(repaired.problems.map(\.kind) == ["unreferenced_file", "index_mismatch"])
        #expect(repaired.clean)
        #expect(try f.store.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM file") } == 1)
        #expect(try listed(f) == 0)
    }

    @Test("a name deleted and put again in one transaction, its file still named twice, stays listed")
    func deleteAndPutAgainKeeps() throws {
        let f = try Fixture()
        let (a, _) = try linkedPair(f)
        #expect(try listed(f) == 1)
        try f.store.write { tx in
            try tx.delete(ref("c", "a"))
            try tx.put(ref("c", "a"), value: ["file": .string(a)])
        }
        #expect(try listed(f) == 1)
        #expect(try f.store.statistics().bytes == 1000)
    }

    @Test("stale entries are looked for by the first real policy run after the open, not by every run")
    func staleEntriesOncePerOpen() throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = 1 << 30
            $0.policy = p
        }
        let stale = { _ = try f.store.write { tx in try tx.db.execute(sql: "INSERT INTO file_shared VALUES (42, 7)") } }
        try stale()  // as an earlier version left it: no row names inode 42
        _ = try f.store.enforce(dryRun: true)
        #expect(try listed(f) == 1)  // a dry run changes nothing
        _ = try f.store.enforce()
        #expect(try listed(f) == 0)
        // Every commit since drops what its rows leave: nothing to look for until the next open.
        try stale()
        _ = try f.store.enforce()
        #expect(try listed(f) == 1)
        try f.reopen()
        _ = try f.store.enforce()
        #expect(try listed(f) == 0)
    }
}
