// What the daemon keeps of leases ended between two sweeps: their files' paths, at most a cap
// of them; past it, the sweep makes every lease-deferred row due again, and the unlink still
// spares a file another live lease covers.

@testable import AssetStore
import AssetStoreTestSupport
import Testing

@Suite struct EndedLeaseFilesTests {
    @Test("past the cap no path is kept, and every lease-deferred row is made due; a leased file stays")
    func overflowReschedulesAll() throws {
        let f = try Fixture()
        var paths = [String]()
        for name in ["a", "b", "c"] {
            let path = try f.makeFile("\(name).bin")
            try f.hold(path, key: name)
            _ = try f.store.leases.acquire(objects: [], files: [path], ttl: 60, holder: name == "c" ? 8 : 7)
            _ = try f.delete(ref("c", name))
            paths.append(path)
        }
        #expect(try f.store.sweep().deferred.count == 3)
        let released = f.store.leases.releaseAll(holder: 7)

        var kept = EndedLeaseFiles(cap: 2)
        kept.add(released)
        #expect(!kept.overflowed && Set(kept.files) == Set(paths[0..<2]))

        var ended = EndedLeaseFiles(cap: 1)
        ended.add(released)
        #expect(ended.overflowed && ended.files.isEmpty && !ended.isEmpty)
        #expect(try f.store.leasesEnded(ended) == 3, "every lease-deferred row, the still-leased one too")
        let sweep = try f.store.sweep()
        #expect(Set(sweep.unlinked) == Set(paths[0..<2]))
        #expect(sweep.deferred.map(\.path) == [paths[2]] && f.exists(paths[2]))
    }

    @Test("two canonically equivalent paths are two files, both made due again")
    func lookalikePaths() throws {
        let f = try Fixture()
        let paths = [try f.makeFile("caf\u{e9}.bin"), try f.makeFile("cafe\u{301}.bin")]
        #expect(paths[0] == paths[1] && paths[0].utf8.count != paths[1].utf8.count)
        var ended = EndedLeaseFiles()
        for (i, path) in paths.enumerated() {
            try f.hold(path, key: "k\(i)")
            ended.add([try f.store.leases.acquire(objects: [], files: [path], ttl: 60, holder: 7)])
            _ = try f.delete(ref("c", "k\(i)"))
        }
        #expect(try f.store.sweep().deferred.count == 2)
        _ = f.store.leases.releaseAll(holder: 7)
        #expect(ended.files.count == 2)
        #expect(try f.store.leasesEnded(ended) == 2)
        #expect(Set(try f.store.sweep().unlinked.map { Array($0.utf8) }) == Set(paths.map { Array($0.utf8) }))
    }
}
