// The lease registry finds a file's leases by its path (LeasedFiles): the sweep asks about
// every file it unlinks inside its write transaction, so the work must not grow with the
// number of leases. Counted, not timed: `filesExamined` counts the leases lookups look at.

@testable import AssetStore
import AssetStoreTestSupport
import Synchronization
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
        let walked = leases.leasesWalked
        let r = try f.store.sweep()
        #expect(r.unlinked.count == 100)
        let examined = leases.filesExamined - before
        #expect(examined <= 400, "the sweep looked at \(examined) leases for 100 files")
        #expect(leases.leasesWalked == walked, "the sweep walked every lease")
    }

    @Test("pending and a lease's end look up their own paths, not every lease")
    func pendingAndEndDoNotWalk() throws {
        let f = try Fixture()
        let leases = f.store.leases
        for i in 0..<2000 { _ = try leases.acquire(objects: [], files: ["\(f.root)/leased/\(i).bin"], ttl: 600) }
        var paths = [String]()
        for i in 0..<20 { paths.append(try f.makeFile("queued/\(i).bin")) }
        try f.put(paths.enumerated().map { (ref("c", "k\($0.offset)"), ["file": .string($0.element)]) })
        try f.store.write { tx in for i in 0..<20 { try tx.delete(ref("c", "k\(i)")) } }
        let mine = try leases.acquire(objects: [], files: [paths[0], paths[1]], ttl: 600)
        let walked = leases.leasesWalked
        var examined = leases.filesExamined

        let page = try f.store.pending(limit: 10)
        #expect(page.count == 10)
        #expect(page.filter { $0.deferred == .leased }.map(\.path) == [paths[0], paths[1]])
        #expect(leases.filesExamined - examined <= 20)
        examined = leases.filesExamined

        #expect(leases.release(mine.id) != nil)
        _ = try f.store.leasesEnded([mine])
        #expect(leases.filesExamined - examined <= 4)
        #expect(leases.leasesWalked == walked, "pending or the lease's end walked every lease")
    }

    @Test("pending and a lease's end look up a long list a chunk per hold of the lock")
    func lookupsPerHold() throws {
        let f = try Fixture()
        let leases = f.store.leases
        var paths = [String]()
        for i in 0..<600 { paths.append(try f.makeFile("queued/\(i).bin")) }
        try f.put(paths.enumerated().map { (ref("c", "k\($0.offset)"), ["file": .string($0.element)]) })
        try f.store.write { tx in for i in 0..<600 { try tx.delete(ref("c", "k\(i)")) } }
        let one = try leases.acquire(objects: [], files: [paths[300]], ttl: 600)
        let all = try leases.acquire(objects: [], files: paths, ttl: 600)
        _ = leases.takeMostLookupsPerHold()

        #expect(leases.release(all.id) != nil)
        _ = try f.store.leasesEnded([all])
        #expect(leases.takeMostLookupsPerHold() <= 256)
        let page = try f.store.pending(limit: 10_000)
        #expect(leases.takeMostLookupsPerHold() <= 256)
        #expect(page.count == 600)
        #expect(page.filter { $0.deferred == .leased }.map(\.path) == [paths[300]])
        #expect(leases.leasedUntil(file: paths[300]) == one.expires)
    }

    @Test("leases lapsing together leave the index 256 paths per hold of the lock")
    func removalsPerHold() throws {
        let f = try Fixture()
        let leases = f.store.leases
        var ids = Set<String>()
        for l in 0..<60 {
            let files = (0..<10).map { f.root + "/lapsing/\(l)/\($0).bin" }
            ids.insert(try leases.acquire(objects: [], files: files, ttl: 5).id)
        }
        let big = try leases.acquire(objects: [], files: (0..<300).map { f.root + "/big/\($0).bin" }, ttl: 5)
        let live = try leases.acquire(objects: [], files: [f.root + "/live.bin"], ttl: 600)
        _ = leases.takeMostRemovedPerHold()
        f.clock.advance(10)

        let lapsed = leases.removeExpired()
        #expect(Set(lapsed.map(\.id)) == ids.union([big.id]))
        // 900 paths in all: a lease's paths go in one hold, so the 300 alone, else 256 at most.
        #expect(leases.takeMostRemovedPerHold() == 300)
        #expect(leases.leasedUntil(file: f.root + "/lapsing/7/3.bin") == nil)
        #expect(leases.leasedUntil(file: f.root + "/big/299.bin") == nil)
        #expect(leases.leasedUntil(file: f.root + "/live.bin") == live.expires)
        #expect(leases.removeExpired().isEmpty)
        #expect(leases.active().map(\.id) == [live.id])
    }

    @Test("without one big lease, lapsed leases leave the index 256 paths per hold at most")
    func removalsPerHoldSmall() throws {
        let f = try Fixture()
        let leases = f.store.leases
        for l in 0..<60 {
            _ = try leases.acquire(objects: [], files: (0..<10).map { f.root + "/lapsing/\(l)/\($0).bin" }, ttl: 5)
        }
        _ = leases.takeMostRemovedPerHold()
        f.clock.advance(10)
        #expect(leases.removeExpired().count == 60)
        let most = leases.takeMostRemovedPerHold()
        #expect(most <= 256 && most >= 250)
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

    @Test("the index compares paths byte for byte and keeps a path's leases as they end in any order")
    func pathKeys() throws {
        let f = try Fixture()
        let leases = f.store.leases
        // One name in two Unicode forms: equal as Swift Strings, two files on disk.
        let nfc = f.root + "/caf\u{E9}.bin"
        let nfd = f.root + "/cafe\u{301}.bin"
        #expect(nfc == nfd)
        let a = try leases.acquire(objects: [], files: [nfc], ttl: 30)
        #expect(leases.leasedUntil(file: nfc) == a.expires)
        #expect(!leases.isLeased(file: nfd))
        #expect(leases.leasedUntil(files: [nfd, nfc]) == [nil, a.expires])

        // The first lease of a path ends before the others, then the latest, then the last.
        let b = try leases.acquire(objects: [], files: [nfc], ttl: 20)
        let c = try leases.acquire(objects: [], files: [nfc, nfc], ttl: 10)
        leases.release(a.id)
        #expect(leases.leasedUntil(file: nfc) == b.expires)
        leases.release(b.id)
        #expect(leases.leasedUntil(file: nfc) == c.expires)
        leases.release(c.id)
        #expect(!leases.isLeased(file: nfc))
        let d = try leases.acquire(objects: [], files: [nfc], ttl: 5)
        #expect(leases.leasedUntil(file: nfc) == d.expires)
    }

    @Test("a path's key is the String of a live lease's, not of one that ended")
    func keyFollowsLiveLease() throws {
        let f = try Fixture()
        let leases = f.store.leases
        // Each lease's path its own String (built apart, too long to be stored inline).
        func path() -> String { f.root + "/a/long/enough/path/to/be/on/the/heap.bin" }
        func address(_ s: String) -> UInt? {
            s.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
        }
        let x = try leases.acquire(objects: [], files: [path()], ttl: 30)
        let y = try leases.acquire(objects: [], files: [path()], ttl: 30)
        #expect(address(x.files[0]) != address(y.files[0]))
        let path = path()
        #expect(leases.fileKeyAddress(path) == address(x.files[0]))
        #expect(leases.release(x.id) != nil)
        // x's String must not stay alive as the key beside y's own.
        #expect(leases.fileKeyAddress(path) == address(y.files[0]))
        #expect(leases.fileKeyAddress(path) != address(x.files[0]))
        #expect(leases.leasedUntil(file: path) == y.expires)
        #expect(leases.release(y.id) != nil)
        #expect(leases.fileKeyAddress(path) == nil && !leases.isLeased(file: path))
    }

    @Test("a lease.list page looks at O(limit) leases, and pages right past ended ones and a filter")
    func listPages() throws {
        let f = try Fixture()
        let leases = f.store.leases
        // One lease in the page's range with a short ttl, to lapse.
        let all = try (0..<2000).map {
            try leases.acquire(objects: [], files: ["\(f.root)/\($0).bin"], ttl: $0 == 1605 ? 5 : 600)
        }
        // Ended leases, enough to compact the order, and one lapsed (not removed).
        for l in all[100..<1500] { leases.release(l.id) }
        f.clock.advance(5)
        let walked = leases.leasesWalked
        let page = try leases.list(after: all[1600].id, limit: 10)
        #expect(page.leases.map(\.id) == (all[1601...1604] + all[1606...1611]).map(\.id) && page.more)
        #expect(leases.leasesWalked - walked <= 12)
        let short = try leases.list(after: all[1603].id, limit: 2)
        #expect(short.leases.map(\.id) == [all[1604].id, all[1606].id] && short.more)
        let across = try leases.list(after: all[95].id, limit: 6)
        #expect(across.leases.map(\.id) == (all[96..<100] + all[1500..<1502]).map(\.id))
        // Every other lease refused by the filter: still `limit` of them, in order.
        let even = try leases.list(after: all[1500].id, limit: 3) { $0.number % 2 == 0 }
        #expect(even.leases.map(\.number) == [1502, 1504, 1506].map { UInt64($0) } && even.more)
        let tail = try leases.list(after: all[1995].id, limit: 3) { $0.number % 2 == 0 }
        #expect(tail.leases.map(\.number) == [1998, 2000] && !tail.more)
    }

    @Test("a lease.list page walks at most 4 × (limit + 1) leases per hold of the lock past lapsed ones")
    func listPastLapsed() throws {
        let f = try Fixture()
        let leases = f.store.leases
        // 1,000 lapsed leases, not removed, before the live ones.
        let lapsed = try (0..<1000).map { try leases.acquire(objects: [], files: ["\(f.root)/x\($0).bin"], ttl: 1) }
        let live = try (0..<20).map { try leases.acquire(objects: [], files: ["\(f.root)/\($0).bin"], ttl: 600) }
        f.clock.advance(1)
        _ = leases.takeMostWalkedPerHold()
        let page = try leases.list(after: nil, limit: 10)
        #expect(leases.takeMostWalkedPerHold() <= 44)
        #expect(page.leases.map(\.id) == live[0..<10].map(\.id) && page.more)
        let rest = try leases.list(after: lapsed[500].id, limit: 20)
        #expect(rest.leases.map(\.id) == live.map(\.id) && !rest.more)
        #expect(leases.takeMostWalkedPerHold() <= 84)
    }

    @Test(
        "two leases of a queued file: the later ends, the sweep defers to the earlier, then unlinks",
        arguments: [LeaseEnd.release, .holderGone])
    func laterLeaseEnds(end: LeaseEnd) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/two.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        let leases = f.store.leases
        let earlier = try leases.acquire(objects: [], files: [path], ttl: 20, holder: 7)
        let later = try leases.acquire(objects: [], files: [path], ttl: 40, holder: 8)
        switch end {
        case .release: #expect(try f.store.leasesEnded([try #require(leases.release(later.id))]) == 0)
        case .holderGone, .expiry: #expect(try f.store.leasesEnded(leases.releaseAll(holder: 8)) == 0)
        }

        let first = try f.store.sweep()
        #expect(first.unlinked.isEmpty && first.deferred.map(\.path) == [path])
        #expect(f.exists(path))
        #expect(try f.store.pending().first?.nextAttempt == earlier.expires)

        // The earlier lapses; no removeExpired: the lapsed lease alone must not keep the file.
        f.clock.advance(20)
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
        #expect(leases.active().isEmpty)
    }

    @Test("a snapshot copies 256 leases at most per hold of the lock, and misses no live one")
    func snapshotPerHold() throws {
        let f = try Fixture()
        let leases = f.store.leases
        var (objects, files) = (Set<ObjectRefKey>(), Set<[UInt8]>())
        for i in 0..<1000 {
            let (o, p) = (ref("c", "k\(i)"), "\(f.root)/s/\(i).bin")
            let l = try leases.acquire(objects: [o], files: [p], ttl: i % 5 == 0 ? 1 : 600)
            // Ended and lapsed ones between the live: the walk passes over them.
            if i % 3 == 0 {
                _ = leases.release(l.id)
            } else if i % 5 != 0 {
                objects.insert(ObjectRefKey(o))
                files.insert(Array(p.utf8))
            }
        }
        f.clock.advance(2)
        _ = leases.takeMostWalkedPerHold()
        let snapshot = leases.snapshot()
        let most = leases.takeMostWalkedPerHold()
        #expect(most <= 256, "one hold of the lock copied \(most) leases")
        #expect(snapshot.objects == objects && snapshot.files == files)
    }

    @Test("a snapshot walked while leases end and begin has every lease live throughout and the new ones")
    func snapshotDuringChanges() throws {
        let f = try Fixture()
        let leases = f.store.leases
        var ids = [String]()
        var (objects, files) = (Set<ObjectRefKey>(), Set<[UInt8]>())
        for i in 0..<1000 {
            let (o, p) = (ref("c", "k\(i)"), "\(f.root)/s/\(i).bin")
            ids.append(try leases.acquire(objects: [o], files: [p], ttl: 600).id)
            if i % 3 == 0 {
                objects.insert(ObjectRefKey(o))
                files.insert(Array(p.utf8))
            }
        }
        // Two thirds, spread over the order: the order is compacted (more than half ended).
        let ended = ids.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        let (newObject, newFile) = (ref("c", "new"), "\(f.root)/s/new.bin")
        let errors = Mutex([String]())
        let calls = Atomic<Int>(0)
        leases.snapshotChunkDone.withLock {
            $0 = {
                guard calls.add(1, ordering: .relaxed).oldValue == 0 else { return }
                // After the first chunk: two thirds end, and two begin.
                for id in ended { _ = leases.release(id) }
                do {
                    _ = try leases.acquire(objects: [newObject], files: [], ttl: 600)
                    _ = try leases.acquire(objects: [], files: [newFile], ttl: 600)
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
        }
        let snapshot = leases.snapshot()
        #expect(calls.load(ordering: .relaxed) > 0 && errors.withLock { $0 }.isEmpty)
        #expect(objects.isSubset(of: snapshot.objects) && files.isSubset(of: snapshot.files))
        #expect(leases.state.withLock { $0.order.count } < 1000, "the order was not compacted")
        #expect(snapshot.objects.contains(ObjectRefKey(newObject)) && snapshot.files.contains(Array(newFile.utf8)))
    }
}
