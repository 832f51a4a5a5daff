// A write transaction's bound on what its rules delete (control.max_cascade_objects for a
// non-admin's request): the flush stops at the first object past it, and the transaction rolls
// back whole; at the bound, or with none, the cascade commits.

@testable import AssetStore
import AssetStoreTestSupport
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
        // The requested object and the ten the bound allows; the eleventh cascaded stopped it.
        #expect(seen?.cascaded == 11 && seen?.deleted == 11)
        #expect(try f.exists(ref("h", "r")))
        for i in 0..<50 { #expect(try f.exists(ref("leaf", "\(i)"))) }
        #expect(try f.store.read { try $0.edgeCount(EdgeFilter()) } == before)
        #expect(try f.store.pending().isEmpty)
        #expect(files.allSatisfy { f.exists($0) })
    }

    @Test("a cascade at the bound, or with none, commits whole", arguments: [50, nil] as [Int?])
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
}
