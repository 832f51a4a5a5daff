// A write transaction's bound on what its rules delete (control.max_cascade_objects for a
// non-admin's request): the flush stops at the first object past it, or past the edges the
// bound allows, before the work behind it is built, and the transaction rolls back whole; at
// the bound, or with none, the cascade commits.

@testable import AssetStore
import AssetStoreTestSupport
import JSON
import Testing

@Suite struct CascadeLimitTests {
    /// A fixture whose h/r is held by `leaves` objects, each holding a file, that go with it
    /// (deleteSourceIfDestinationDeleted), and the leaves' files.
    private func chain(leaves: Int) throws -> (Fixture, [String]) {
        let f = try Fixture()
        try f.put([(ref("h", "r"), [:])])
        var files = [String]()
        for i in 0..<leaves {
            files.append(try f.makeFile("leaf-\(i)"))
            try f.put([(ref("leaf", "\(i)"), ["file": .string(files[i])])])
            try f.store.write { tx in
                try tx.addEdge(
                    name: "of", source: ref("leaf", "\(i)"), destination: .object(ref("h", "r")),
                    rules: .deleteSourceIfDestinationDeleted)
            }
        }
        return (f, files)
    }

    @Test("a cascade past the bound stops at the first object over it, and nothing is committed")
    func stopsEarly() throws {
        let (f, files) = try chain(leaves: 50)
        let before = try f.store.read { try $0.edgeCount(EdgeFilter()) }
        var seen: (cascaded: Int, deleted: Int)?
        let refused = expectCode(.cascadeLimit) {
            try f.store.write { tx in
                tx.limitCascade(to: 10)
                tx.limitCascade(to: nil)  // no bound of one caller lifts another's
                tx.limitCascade(to: 20)
                try tx.delete(ref("h", "r"))
                do { try tx.flush() } catch {
                    seen = (tx.cascaded, tx.report.deleted.count)
                    throw error
                }
            }
        }
        #expect(refused?.detail?["limit"] == "control.max_cascade_objects" && refused?.detail?["value"] == 10)
        #expect(refused?.message.contains("control.max_cascade_objects = 10") == true)
        // Counted as the holder's edges were read, before any leaf was deleted: only the
        // requested object went (and came back with the rollback).
        #expect(seen?.cascaded == 11 && seen?.deleted == 1)
        #expect(try f.exists(ref("h", "r")))
        for i in 0..<50 { #expect(try f.exists(ref("leaf", "\(i)"))) }
        #expect(try f.store.read { try $0.edgeCount(EdgeFilter()) } == before)
        #expect(try f.store.pending().isEmpty)
        #expect(files.allSatisfy { f.exists($0) })
    }

    @Test(
        "a cascade at the bound, with none, or with the largest, commits whole",
        arguments: [50, nil, Int.max] as [Int?])
    func atTheBound(limit: Int?) throws {
        let (f, _) = try chain(leaves: 50)
        let report = try f.store.write { tx in
            tx.limitCascade(to: limit)
            try tx.delete(ref("h", "r"))
        }.report
        #expect(report.deleted.count == 51 && report.filesQueued.count == 50)
        #expect(try f.store.read { try $0.edgeCount(EdgeFilter()) } == 0)
    }

    @Test("the objects a request names do not count against the bound")
    func requestedNotCounted() throws {
        let f = try Fixture()
        try f.put((0..<20).map { (ref("c", "\($0)"), [:]) })
        let report = try f.store.write { tx in
            tx.limitCascade(to: 1)
            for i in 0..<20 { try tx.delete(ref("c", "\(i)")) }
        }.report
        #expect(report.deleted.count == 20)
    }

    @Test("a hub's sources past the bound stop the read of its edges: no work is queued for them")
    func hubStopsAtTheRead() throws {
        let f = try Fixture()
        try f.put([(ref("h", "r"), [:] as JSONValue)] + (0..<60).map { (ref("s", "\($0)"), [:] as JSONValue) })
        try f.store.write { tx in
            for i in 0..<60 {
                try tx.addEdge(
                    name: "of", source: ref("s", "\(i)"), destination: .object(ref("h", "r")),
                    rules: .deleteSourceIfDestinationDeleted)
            }
        }
        var seen: (edges: Int, work: Int)?
        let refused = expectCode(.cascadeLimit) {
            try f.store.write { tx in
                tx.limitCascade(to: 10)
                try tx.delete(ref("h", "r"))
                do { try tx.flush() } catch {
                    seen = (tx.report.edgesRemoved.count, tx.work.count)
                    throw error
                }
            }
        }
        #expect(refused != nil)
        // Stopped at the eleventh source's edge: no edge was reported, only the request queued.
        #expect(try #require(seen).edges == 0 && seen!.work <= 11, "\(String(describing: seen))")
        #expect(try f.store.read { try $0.edgeCount(EdgeFilter()) } == 60)
    }

    @Test(
        "the edges the deletions remove are bounded too, 10 for each object the bound allows",
        arguments: [29, 30, 31])
    func edgesBounded(edges: Int) throws {
        let f = try Fixture()
        try f.put([(ref("h", "r"), [:] as JSONValue)] + (0..<edges).map { (ref("s", "\($0)"), [:] as JSONValue) })
        try f.store.write { tx in
            for i in 0..<edges {
                try tx.addEdge(name: "of", source: ref("s", "\(i)"), destination: .object(ref("h", "r")), rules: [])
            }
        }
        // A bound of 2 allows (2 + 1) × 10 edges.
        let delete = {
            try f.store.write { tx in
                tx.limitCascade(to: 2)
                try tx.delete(ref("h", "r"))
            }
        }
        if edges > 30 {
            let e = expectCode(.cascadeLimit) { _ = try delete() }
            #expect(e?.message.contains("more than 30 edges") == true && e?.detail?["value"] == 2)
            #expect(try f.exists(ref("h", "r")))
        } else {
            #expect(try delete().report.edgesRemoved.count == edges)
        }
    }

    @Test("an object a request named is not counted when a rule reaches it first")
    func namedReachedByRule() throws {
        let f = try Fixture()
        try f.put([(ref("h", "r"), [:]), (ref("s", "0"), [:])])
        try f.store.write { tx in
            try tx.addEdge(
                name: "of", source: ref("s", "0"), destination: .object(ref("h", "r")),
                rules: .deleteSourceIfDestinationDeleted)
        }
        let report = try f.store.write { tx in
            tx.limitCascade(to: 0)
            try tx.delete(ref("h", "r"))
            try tx.delete(ref("s", "0"))
        }.report
        #expect(report.deleted.count == 2)
    }

    @Test("a bound set in a part that failed does not stay")
    func attemptRestoresTheBound() throws {
        let f = try Fixture()
        try f.store.write { tx in
            struct Failed: Error {}
            _ = try? tx.attempt { () throws -> Void in
                tx.limitCascade(to: 1)
                throw Failed()
            }
            #expect(tx.cascadeLimit == nil)
            tx.limitCascade(to: 5)
            _ = try? tx.attempt { () throws -> Void in
                tx.limitCascade(to: 1)
                throw Failed()
            }
            #expect(tx.cascadeLimit == 5)
        }
    }
}
