// Set-based policy deletes (WriteTransaction+BatchDelete) against the rule worklist: on the
// same store, with the fast path on and off, a policy run gives the same plan, commit
// reports, counters and tables; batches that need rules (cascades, deny, notify, a freed file
// another edge reaches) go to the worklist, whole.

import Foundation
import GRDB
import PropertyBased
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// The store's tables as text, paths relative to the fixture (identities and mtimes differ
/// between fixtures, so file and queue rows leave them out).
private func tables(_ f: Fixture, extra: [String] = []) throws -> String {
    let queries =
        [
            "SELECT * FROM object ORDER BY id", "SELECT * FROM edge ORDER BY id",
            "SELECT id, path, size, missing, first_seen FROM file ORDER BY id",
            "SELECT id, path, size, commit_no, queued_at, next_attempt, attempts FROM unlink_queue ORDER BY id",
            "SELECT * FROM index_default ORDER BY 1", "SELECT * FROM counter ORDER BY 1",
            "SELECT * FROM meta ORDER BY 1",
        ] + extra.map { "SELECT * FROM \($0) ORDER BY 1" }
    return try f.store.read { r in
        try queries.map { q in try Row.fetchAll(r.db, sql: q).map(\.description).joined(separator: "|") }
    }.joined(separator: "\n").replacingOccurrences(of: f.dir, with: "<dir>")
}

/// Applies random operations as `PropertyTests.Run.run` does (transactions of several, some
/// failing, an occasional sweep), without its checks: what is compared here is the policy.
private func build(_ run: PropertyTests.Run, _ ops: [Int]) throws {
    var batch = [Int]()
    for n in ops + [9] {
        batch.append(n)
        if n % 10 < 8 { continue }
        do {
            let r = try run.f.store.write { tx in for op in batch { try run.apply(op, tx) } }
            run.queuedEver.formUnion(r.report.filesQueued)
        } catch is StoreError {}
        batch = []
        run.f.clock.advance(1)
        if (n / 7) % 9 == 1 { _ = try run.f.store.sweep() }
    }
}

/// A plan as text, paths relative to the fixture, and the reasons objects were skipped in a
/// fixed order: a dictionary's order may follow the order they were met in, which the two
/// paths' groups change (an expiry meets pinned objects as rows, leased ones as refusals).
private func text(_ plan: PolicyPlan, _ f: Fixture) -> String {
    var p = plan
    p.skipped = [:]
    let skipped = plan.skipped.map { "\($0.key): \($0.value)" }.sorted()
    return "\(p), skipped: \(skipped)".replacingOccurrences(of: f.dir, with: "<dir>")
}

/// A store where expiry meets every case: objects that only hold their own files, two that
/// share a file, one whose file a younger object also holds, a cascade over a manual edge,
/// a freed file another edge (no rules) still reaches, a notify edge, a pinned object and a
/// leased file. Everything but the `young` collection is two hours old.
private func mixedStore(setBased: Bool) throws -> Fixture {
    let f = try Fixture { $0.setBasedPolicyDeletes = setBased }
    var paths = [String: String]()
    for name in ["shared", "kept", "watched", "pinned", "leased"] + (0..<12).map({ "own\($0)" }) {
        paths[name] = try f.makeFile("d\(name.count % 3)/\(name).bin", size: 10 + name.count)
    }
    try f.store.write { tx in
        for i in 0..<12 { try tx.put(ref("assets", "a\(i)"), value: ["file": .string(paths["own\(i)"]!)]) }
        try tx.put(ref("assets", "s0"), value: ["file": .string(paths["shared"]!)])
        try tx.put(ref("assets", "s1"), value: ["file": .string(paths["shared"]!)])
        try tx.put(ref("assets", "t0"), value: ["file": .string(paths["kept"]!)])
        try tx.put(ref("assets", "c0"), value: ["note": "cascades"])
        try tx.put(ref("other", "x"), value: ["note": "goes with c0"])
        try tx.addEdge(
            name: "owns", source: ref("assets", "c0"), destination: .object(ref("other", "x")),
            rules: .deleteDestinationIfSourceDeleted)
        try tx.put(ref("assets", "n0"), value: ["file": .string(paths["watched"]!)])
        try tx.put(ref("assets", "m0"), value: ["note": "notifies"])
        try tx.put(ref("assets", "p0"), value: ["file": .string(paths["pinned"]!)])
        try tx.pin(ref("assets", "p0"))
        try tx.put(ref("assets", "l0"), value: ["file": .string(paths["leased"]!)])
        for i in 12..<20 { try tx.put(ref("assets", "a\(i)"), value: ["note": "no file"]) }
    }
    f.clock.advance(7200)
    // Young, so expiry keeps them: they see their edges go.
    try f.store.write { tx in
        try tx.put(ref("young", "y"), value: ["file": .string(paths["kept"]!)])
        try tx.put(ref("young", "watcher"), value: ["note": "watches"])
        try tx.addEdge(name: "watch", source: ref("young", "watcher"), destination: .file(paths["watched"]!), rules: [])
        try tx.put(ref("young", "listener"), value: ["note": "listens"])
        try tx.addEdge(
            name: "tell", source: ref("assets", "m0"), destination: .object(ref("young", "listener")),
            rules: .notifyIfSourceDeleted)
    }
    _ = try f.store.leases.acquire(objects: [], files: [paths["leased"]!], ttl: 600)
    return f
}

@Suite struct BatchDeleteTests {
    @Test(
        "expiry of a mixed store gives the same plan, reports and tables with set-based deletes as with the worklist",
        arguments: [1000, 4, 1])
    func mixedStoreSameResult(batch: Int) throws {
        var results = [(plan: String, dry: String, tables: String)]()
        for setBased in [false, true] {
            let f = try mixedStore(setBased: setBased)
            var p = PolicyConfiguration()
            p.batch = batch
            f.store.policy = p
            let dry = try f.store.expire(collection: nil, olderThan: 3600, idle: nil, dryRun: true)
            let plan = try f.store.expire(collection: nil, olderThan: 3600, idle: nil)
            results.append((text(plan, f), text(dry, f), try tables(f)))
            // What the rules say, whichever path ran.
            let refs = Set(plan.objects.map(\.ref))
            #expect(
                refs.contains(ref("other", "x"))
                    && plan.objects.contains { $0.ref == ref("other", "x") && $0.reason == .cascade })
            #expect(
                !refs.contains(ref("assets", "p0")) && !refs.contains(ref("assets", "l0"))
                    && !refs.contains(ref("young", "y")))
            // A freed file another edge reaches: it goes, and that edge with it (its rules fire: none).
            #expect(refs.contains(ref("assets", "n0")) && plan.files.contains { $0.hasSuffix("/watched.bin") })
            #expect(
                plan.commits.flatMap(\.edgesRemoved).contains {
                    $0.edge.name == "watch" && $0.reason == .destinationDeleted
                })
            #expect(plan.files.filter { $0.hasSuffix("/shared.bin") }.count == 1)
            #expect(!plan.files.contains { $0.hasSuffix("/kept.bin") })
            #expect(plan.commits.flatMap(\.notifications).contains { $0.node == ref("young", "listener") })
        }
        #expect(results[0].plan == results[1].plan)
        #expect(results[0].dry == results[1].dry)
        #expect(results[0].tables == results[1].tables)
    }

    @Test(
        "a batch of objects that only hold their files goes set-based; one with a cascade, deny or notify edge does not"
    )
    func eligibility() throws {
        let f = try mixedStore(setBased: true)
        func ids(_ keys: [String]) throws -> [Int64] {
            try f.store.read { r in
                try keys.map { k in
                    try Int64.fetchOne(r.db, sql: "SELECT id FROM object WHERE key = ?", arguments: [k])!
                }
            }
        }
        let plain = try ids(["a0", "a1", "s0", "s1", "t0", "a12"])
        for keys in [["a0", "c0"], ["m0"], ["n0"], ["a2", "n0"]] {
            let batch = try ids(keys)
            try f.store.write { tx in
                let done = try tx.deleteReferenceCounted(batch)
                #expect(done == nil, "\(keys)")
                #expect(tx.report.deleted.isEmpty && tx.deletedIDs.isEmpty)
            }
        }
        let report = try f.store.write { tx in
            let done = try tx.deleteReferenceCounted(plain)
            #expect(done != nil)
            #expect(tx.deletedDetails.map(\.ref.key) == ["a0", "a1", "s0", "s1", "t0", "a12"])
        }.report
        #expect(report.deleted.map(\.ref.key) == ["a0", "a1", "s0", "s1", "t0", "a12"])
        #expect(report.deleted.allSatisfy { $0.cause == .policy })
        #expect(report.edgesRemoved.count == 5 && report.edgesRemoved.allSatisfy { $0.reason == .sourceDeleted })
        #expect(
            report.filesQueued.map { ($0 as NSString).lastPathComponent } == ["own0.bin", "own1.bin", "shared.bin"])
        #expect(
            try f.store.read { try $0.file(f.root + "/d1/kept.bin") }?.edges.count == 1,
            "kept: the young object holds it")
        #expect(try f.store.query(clause: "WHERE key = 'a0'").isEmpty, "its index row went")
    }

    @Test(
        "after random operations, any policy gives the same plan and tables with set-based deletes as with the worklist"
    )
    func randomStores() async {
        await propertyCheck(count: 30, input: Gen.int(in: 0...9_999_999).array(of: 10...60)) { ops in
            var results = [(String, String, String)]()
            for setBased in [false, true] {
                let run = try PropertyTests.Run()
                run.f.configuration.setBasedPolicyDeletes = setBased
                try run.f.reopen(drain: false)
                try build(run, ops)
                let f = run.f
                let seed = ops.reduce(0, &+)
                f.clock.advance(Double(seed % 60))
                var p = PolicyConfiguration()
                p.minAge = Double(seed % 40)
                p.batch = 1 + seed % 6
                if seed % 3 != 0 { p.maxBytes = Int64(seed % 120) }
                if seed % 2 == 0 { p.quotas = [.init(owner: "o\(seed % 3)", maxBytes: Int64(seed % 50))] }
                if seed % 5 < 3 {
                    p.ttls = [.init(collection: "p", maxIdle: Double(seed % 30), maxAge: Double(seed % 20))]
                }
                f.store.policy = p
                let dry = try f.store.enforce(dryRun: true)
                let real = try f.store.enforce()
                let expired = try f.store.expire(collection: nil, olderThan: 0, idle: nil)
                results.append((text(dry, f), text(real, f) + text(expired, f), try tables(f, extra: ["index_nums"])))
                run.queuedEver.formUnion(real.files + expired.files)
                try run.checkInvariants(afterSweep: false)
            }
            #expect(results[0].0 == results[1].0)
            #expect(results[0].1 == results[1].1)
            #expect(results[0].2 == results[1].2)
        }
    }
}

@Suite struct BatchDeleteSkipTests {
    @Test("an expiry group refused for a leased file counts that object alone as skipped", arguments: [false, true])
    func refusedGroupCountsOnlyTheProtected(setBased: Bool) throws {
        let f = try mixedStore(setBased: setBased)
        var p = PolicyConfiguration()
        p.batch = 1000
        f.store.policy = p
        let dry = try f.store.expire(collection: nil, olderThan: 3600, idle: nil, dryRun: true)
        let plan = try f.store.expire(collection: nil, olderThan: 3600, idle: nil)
        #expect(plan.skipped[.leased] == 1, "\(plan.skipped)")
        #expect(dry.skipped == plan.skipped)
        #expect(!plan.objects.contains { $0.ref == ref("assets", "l0") })
    }
}
