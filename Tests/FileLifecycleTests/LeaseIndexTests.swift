// The lease registry finds a file's leases by its path (LeasedFiles): the sweep asks about
// every file it unlinks inside its write transaction, so the work must not grow with the
// number of leases. Counted, not timed: `filesExamined` counts the leases lookups look at.

@testable import AssetStore
import AssetStoreTestSupport
import Testing

@Suite("lease file index")
struct LeaseIndexTests {
    @Test("sweeping 100 unrelated files with 10,000 leased paths looks at O(100) leases")
    func sweepDoesNotScanLeases() throws {
        let f = try Fixture()
        let leases = f.store.leases
        for i in 0..<100 {
            _ = try leases.acquire(
                objects: [], files: (0..<100).map { "\(f.root)/leased/\(i)/\($0).bin" }, ttl: 600)
        }
        var paths = [String]()
        for i in 0..<100 { paths.append(try f.makeFile("free/\(i).bin")) }
        try f.put(paths.enumerated().map { (ref("c", "k\($0.offset)"), ["file": .string($0.element)]) })
        try f.store.write { tx in for i in 0..<100 { try tx.delete(ref("c", "k\(i)")) } }
        let before = leases.filesExamined
        let r = try f.store.sweep()
        #expect(r.unlinked.count == 100)
        let examined = leases.filesExamined - before
        #expect(examined <= 400, "the sweep looked at \(examined) leases for 100 files")
    }

    @Test("a path under two leases stays leased until the later one ends; ending them is linear")
    func sharedPath() throws {
        let f = try Fixture()
        let leases = f.store.leases
        let path = f.root + "/shared.bin"
        let short = try leases.acquire(objects: [], files: [path], ttl: 10)
        let long = try leases.acquire(objects: [], files: [path, path], ttl: 20)
        #expect(leases.leasedUntil(file: path) == long.expires)
        #expect(leases.release(long.id) != nil)
        #expect(leases.leasedUntil(file: path) == short.expires)
        f.clock.advance(10)
        #expect(!leases.isLeased(file: path))
        #expect(leases.removeExpired().map(\.id) == [short.id])
        #expect(leases.leasedUntil(file: path) == nil)

        // 2,000 leases of one path, released latest first: one recount at the next lookup,
        // not one per release.
        let many = try (0..<2000).map { try leases.acquire(objects: [], files: [path], ttl: Double(100 + $0)) }
        for l in many.reversed().prefix(1999) { leases.release(l.id) }
        let before = leases.filesExamined
        #expect(leases.leasedUntil(file: path) == many[0].expires)
        #expect(leases.filesExamined - before <= 2)
        #expect(leases.nextExpiry() == many[0].expires)
    }
}
