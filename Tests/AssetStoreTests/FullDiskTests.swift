// The store on a small or full disk (assetd(8), FULL DISK): the database's folder is a tmpfs
// the test fills. Mounting needs CAP_SYS_ADMIN: skipped, saying so, without it.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import GRDB
import Synchronization
import Testing

/// A store whose database folder is a tmpfs of `mib` MiB (the root stays on the test disk).
private func fixtureOnTmpfs(mib: Int) throws -> Fixture {
    try Fixture { c in
        let state = (c.roots[0] as NSString).deletingLastPathComponent + "/state"
        if !Tmpfs.mount(state, mib: mib) { Issue.record("mount: errno \(errno)") }
    }
}

private func fileSize(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : -1
}

/// Free bytes on the filesystem holding `path`.
private func freeBytes(_ path: String) -> Int64 {
    var vfs = statvfs()
    guard statvfs(path, &vfs) == 0 else { return -1 }
    return Int64(vfs.f_bavail) * Int64(vfs.f_frsize)
}

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct FullDiskStoreTests {
    @Test("with little free space the writer checkpoints early: 4 MiB of commits leave a WAL near 1 MiB, not 4")
    func walKeptSmallWhenSpaceIsLow() throws {
        let f = try fixtureOnTmpfs(mib: 32)
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "w", count: 40_000))
        for i in 0..<100 { try f.put([(ref("c", "k\(i)"), ["text": text])]) }
        let wal = fileSize(f.dbPath + "-wal")
        // 256 frames and the commit that crossed them; today the WAL grew to every frame (16 MiB first).
        #expect(wal > 0 && wal < 2 << 20, "the WAL is \(wal) bytes")
        #expect(f.store.checkpointer.lowSpaceRuns.load(ordering: .relaxed) > 0)
        #expect(try f.store.read { try $0.get(ref("c", "k99")) }?.value["text"] == text)
    }

    @Test(
        "on a full disk a put answers storage_full and keeps the reserve; a delete, an eviction and forgetting queued unlinks commit through it, and only they until there is room; it is allocated again then"
    )
    func reserveFreesSpaceForDeletes() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        let ballast = f.dbPath + ".ballast"
        #expect(f.store.reservePath == ballast)
        #expect(fileSize(ballast) == 512 << 10, "8 MiB reserve cut to a sixteenth of the disk")
        // Few commits: the WAL stays under the frames at which low space checkpoints it, so
        // every commit from here on needs new blocks (a WAL started over reuses its own).
        let text = JSONValue.string(String(repeating: "v", count: 300))
        // Eviction picks objects that hold files.
        let files = try (0..<10).map { try f.makeFile("a\($0).bin") }
        try f.put((0..<10).map { (ref("c", "k\($0)"), ["text": text, "file": .string(files[$0])]) }, owner: "alice")
        try f.put((10..<20).map { (ref("c", "k\($0)"), ["text": text]) }, owner: "bob")
        let queued = try f.makeFile("q.bin")
        try f.put([(ref("c", "q"), ["file": .string(queued)])])
        _ = try f.store.leases.acquire(objects: [], files: [queued], ttl: 600)  // keeps its unlink queued
        try f.delete(ref("c", "q"))
        let filler = f.dir + "/state/filler"
        Tmpfs.fill(filler)

        #expect(expectCode(.storageFull) { try f.put([(ref("c", "new"), ["text": text])]) } != nil)
        #expect(f.store.reserveHeld, "a put does not use the reserve")
        try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k15")) }
        #expect(!f.store.reserveHeld)
        #expect(try !f.exists(ref("c", "k15")))
        #expect(
            f.store.takeSpaceNotices().contains {
                $0.message.contains("released the reserve \(ballast) so that a delete")
            })
        // What the reserve gave back is for deletes until there is room: a put would take it.
        #expect(expectCode(.storageFull) { try f.put([(ref("c", "new"), ["text": text])]) } != nil)
        try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k16")) }

        // Room again: the reserve comes back; then full once more, an eviction uses it.
        #expect(truncate(filler, 0) == 0)
        f.store.maintainSpace()
        #expect(f.store.reserveHeld && fileSize(ballast) == 512 << 10)
        Tmpfs.fill(filler)
        f.clock.advance(3600)  // past policy.min_age
        let plan = try f.store.evict(bytes: nil, owner: "alice")
        #expect(plan.objects.count == 10)
        #expect(!f.store.reserveHeld)

        #expect(truncate(filler, 0) == 0)
        f.store.maintainSpace()
        #expect(f.store.reserveHeld)
        Tmpfs.fill(filler)
        #expect(try f.store.forgetQueued([queued]) == [queued])
        #expect(!f.store.reserveHeld)
        #expect(f.store.takeSpaceNotices().contains { $0.message.contains("forgetting queued unlinks") })
    }

    @Test("on a full disk an eviction goes on without writing pending touches that need more than the reserve")
    func evictionLeavesTouchesPendingOnAFullDisk() throws {
        let f = try fixtureOnTmpfs(mib: 8)  // a reserve of 512 KiB
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "v", count: 300))
        let files = try (0..<10).map { try f.makeFile("a\($0).bin") }
        try f.put((0..<10).map { (ref("c", "k\($0)"), ["text": text, "file": .string(files[$0])]) }, owner: "alice")
        // A touch of each of 3,000 objects: writing them rewrites about 1.5 MiB of pages.
        let others = (0..<3000).map { ref("d", "o\($0)") }
        for chunk in stride(from: 0, to: others.count, by: 300) {
            try f.put(others[chunk..<chunk + 300].map { ($0, ["text": text]) }, owner: "bob")
        }
        f.clock.advance(3600)  // past policy.min_age
        for r in others { try f.store.touch(r) }
        try f.store.checkpoint()  // an empty WAL: every page a commit writes needs new blocks
        Tmpfs.fill(f.dir + "/state/filler")
        let plan = try f.store.evict(bytes: nil, owner: "alice")
        #expect(plan.objects.count == 10)
        #expect(f.store.pendingAccessCount == others.count, "the touches wait for room")
        #expect(
            f.store.takeSpaceNotices().contains {
                $0.message.contains("access times wait in memory for room on the disk")
            })
    }

    @Test(
        "reopened on a full disk with a WAL left and a changed index, the store opens with warnings naming what it could not write, keeps the stored definitions, serves reads and answers writes storage_full"
    )
    func openSkipsWritesOnFullDisk() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        try f.put([(ref("c", "a"), ["n": 1])])
        Tmpfs.fill(f.dir + "/state/filler")
        f.configuration.indexes = [
            IndexDefinition(
                name: "nums", version: "1", collections: ["c"],
                columns: [
                    IndexColumn(name: "n", type: .integer, path: JSONPath("$.n")!)
                ])
        ]
        try f.reopen()  // today: storage_full (the WAL's write-back, then the index build)
        let warnings = f.store.openWarnings.joined(separator: "\n")
        #expect(
            warnings.contains(
                "the WAL the last run left could not be written back: the disk holding \(f.dbPath) is full"))
        #expect(warnings.contains("not written at start: the configured indexes and templates"), "\(warnings)")
        // Opened by its plain path: behind the coalescing VFS's URI, GRDB would write at open.
        #expect(f.store.walCoalescing.reason?.contains("the disk was full") == true)
        #expect(try f.store.read { try $0.get(ref("c", "a")) }?.value == ["n": 1])
        #expect(try f.store.read { try $0.storedIndexes() }.isEmpty, "the stored definitions stay")
        #expect(expectCode(.storageFull) { try f.put([(ref("c", "b"), [:])]) } != nil)
    }

    @Test(
        "reopened on a full disk with a WAL left, the store reserves lease numbers through the reserve and grants leases"
    )
    func leaseNumbersUseReserve() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        try f.put([(ref("c", "a"), ["n": 1])])
        Tmpfs.fill(f.dir + "/state/filler")
        try f.reopen()  // the close could not write the WAL back: the open's writes need new blocks
        #expect(!f.store.openWarnings.contains { $0.contains("lease numbers") }, "\(f.store.openWarnings)")
        #expect(try f.store.leases.acquire(objects: [ref("c", "a")], files: [f.root + "/x"], ttl: 60).id.first == "L")
        #expect(!f.store.reserveHeld)
        #expect(f.store.takeSpaceNotices().contains { $0.message.contains("so that the lease numbers can commit") })
    }

    @Test("reopened on a full disk with no reserve, the open warns once that leases answer storage_full, and they do")
    func leaseNumbersWithoutReserve() throws {
        let f = try Fixture { c in
            let state = (c.roots[0] as NSString).deletingLastPathComponent + "/state"
            if !Tmpfs.mount(state, mib: 8) { Issue.record("mount: errno \(errno)") }
            c.reserve = 0
        }
        defer { Tmpfs.unmount(f.dir + "/state") }
        try f.put([(ref("c", "a"), ["n": 1])])
        Tmpfs.fill(f.dir + "/state/filler")
        try f.reopen()
        let warned = f.store.openWarnings.filter { $0.contains("lease numbers not reserved") }
        #expect(warned.count == 1, "\(f.store.openWarnings)")
        #expect(
            expectCode(.storageFull) { try f.store.leases.acquire(objects: [], files: [f.root + "/x"], ttl: 60) } != nil
        )
        #expect(try f.store.read { try $0.get(ref("c", "a")) }?.value == ["n": 1])
    }

    @Test("on a full disk, a step back of the wall clock does not stop the sweep: due files are still unlinked")
    func stepBackBoundOnAFullDisk() throws {
        let f = try Fixture { c in
            c.unlinkDelay = 600
            let state = (c.roots[0] as NSString).deletingLastPathComponent + "/state"
            if !Tmpfs.mount(state, mib: 8) { Issue.record("mount: errno \(errno)") }
        }
        defer { Tmpfs.unmount(f.dir + "/state") }
        let early = try f.makeFile("early.bin"), late = try f.makeFile("late.bin")
        try f.put([(ref("c", "a"), ["file": .string(early)]), (ref("c", "b"), ["file": .string(late)])])
        #expect(try f.delete(ref("c", "a")).filesQueued == [early])
        // A step back: the first row is now a day and 600 s ahead, for the sweep to bound.
        f.clock.step(-86_400)
        #expect(try f.delete(ref("c", "b")).filesQueued == [late])
        f.clock.advance(600)
        Tmpfs.fill(f.dir + "/state/filler")
        // The bound cannot be written; the second row is due all the same.
        #expect(try f.store.sweep().unlinked == [late])
        #expect(f.exists(early))
    }

    @Test("reopened on a full disk with an unlink due, the store's drain at open commits through the reserve")
    func drainAtOpenUsesReserve() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        let file = try f.makeFile("due.bin")
        try f.put([(ref("c", "a"), ["file": .string(file)])])
        #expect(try f.delete(ref("c", "a")).filesQueued == [file])
        Tmpfs.fill(f.dir + "/state/filler")
        try f.reopen()  // today: storage_full
        #expect(!f.exists(file))
        #expect(try f.store.pending().isEmpty)
        #expect(!f.store.reserveHeld)
    }
    @Test("a v4 database with a WAL left, reopened on a full disk, is upgraded through the reserve and serves reads")
    func upgradeUsesReserve() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        try f.put([(ref("c", "a"), ["n": 1])])
        f.store.close()
        // As v4 left it when it stopped on a full disk: the WAL it could not write back (the
        // database file must grow for the write-back) is still there.
        let pool = try DatabasePool(path: f.dbPath)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.inTransaction {
                for column in ["birth", "generation", "ctime"] {
                    try db.execute(sql: "ALTER TABLE file DROP COLUMN \(column)")
                    try db.execute(sql: "ALTER TABLE unlink_queue DROP COLUMN \(column)")
                }
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v5'")
                try db.execute(sql: "CREATE TABLE bulk (b BLOB); INSERT INTO bulk VALUES (zeroblob(1048576))")
                return .commit
            }
        }
        #expect(f.store.reserveHeld)
        Tmpfs.fill(f.dir + "/state/filler")
        try pool.close()
        #expect(fileSize(f.dbPath + "-wal") > 1 << 20, "the WAL is left")

        try f.reopen()  // before: storage_full from the v5 migration's ALTER TABLEs
        #expect(try f.store.read { r in try r.db.columns(in: "unlink_queue").map(\.name) }.contains("generation"))
        #expect(try f.store.read { try $0.get(ref("c", "a")) }?.value == ["n": 1])
        #expect(!f.store.reserveHeld)
        #expect(f.store.takeSpaceNotices().contains { $0.message.contains("so that the schema upgrade can commit") })
    }
    @Test("a sweep that meets a full disk commits through the reserve and reports every file it unlinked, once")
    func sweepUsesReserve() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        let files = try (0..<20).map { try f.makeFile("s\($0).bin") }
        let refs = files.indices.map { ref("c", "k\($0)") }
        try f.put(files.indices.map { (refs[$0], ["file": .string(files[$0])]) })
        try f.store.write { tx in for r in refs { try tx.delete(r) } }
        let before = try f.store.counters()["unlinked"] ?? 0
        Tmpfs.fill(f.dir + "/state/filler")

        let unlinks = Mutex([String: Int]())
        let report = try f.store.sweep(retryFailed: false, batch: 1000, threads: 1) { path in
            unlinks.withLock { $0[path, default: 0] += 1 }
        }
        #expect(!f.store.reserveHeld, "the sweep met the full disk")
        #expect(
            report.unlinked.sorted() == files.sorted(),
            "\(report.unlinked.count) of 20: \(report.skipped) \(report.failed)")
        #expect(try f.store.counters()["unlinked"] == before + 20)
        #expect(files.allSatisfy { !f.exists($0) })
        #expect(try f.store.pending().isEmpty)
        #expect(
            unlinks.withLock { $0 } == Dictionary(uniqueKeysWithValues: files.map { ($0, 1) }),
            "each file unlinked once")
    }

    @Test(
        "a disk the database's values filled: once most objects are deleted, puts come back from the database's free pages, with the reserve allocated again"
    )
    func putsComeBackFromFreePages() throws {
        let f = try fixtureOnTmpfs(mib: 8)  // a reserve of 512 KiB
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "v", count: 100_000))
        var n = 0
        fill: while n < 200 {
            do {
                try f.put([(ref("c", "k\(n)"), ["text": text])])
            } catch let e as StoreError where e.code == .storageFull {
                break fill
            }
            n += 1
        }
        #expect(n > 20 && n < 200, "\(n) puts")
        // The disk at 0: the deletes meet it, and the reserve goes to them. The WAL written
        // back first: growth of the file left in it would need blocks (assetd(8), FULL DISK).
        #expect(try f.store.checkpoint())
        let filler = f.dir + "/state/filler"
        Tmpfs.fill(filler)
        for i in 0..<n * 3 / 4 { try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k\(i)")) } }
        #expect(!f.store.reserveHeld, "the deletes met the full disk")
        #expect(try f.store.checkpoint())
        // Something else keeps the disk nearly full: room for the reserve and 200 KiB, less
        // than the reserve and its headroom (256 KiB).
        Tmpfs.fill(filler)
        #expect(truncate(filler, off_t(fileSize(filler) - (712 << 10))) == 0)
        f.store.maintainSpace()
        // Before: the disk never had the reserve and its headroom free, so puts waited for good.
        #expect(f.store.reserveHeld)
        try f.put([(ref("c", "small"), ["n": 1])])
        try f.put([(ref("c", "big"), ["text": text])])
        #expect(f.store.takeSpaceNotices().contains { $0.message.contains("of free pages in the database") })
    }

    @Test(
        "on a full disk with the reserve used up, a delete whose WAL write-back a reader's snapshot holds is refused at once, naming the reader; once the reader is done, deletes commit"
    )
    func writeBackWaitsForNoReader() throws {
        let f = try Fixture { c in
            let state = (c.roots[0] as NSString).deletingLastPathComponent + "/state"
            if !Tmpfs.mount(state, mib: 8) { Issue.record("mount: errno \(errno)") }
            c.reserve = 0
        }
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "v", count: 3000))
        try f.put((0..<50).map { (ref("c", "k\($0)"), ["text": text]) })
        #expect(try f.store.checkpoint())
        // Frames in the WAL, which the reader reads; the same pages, so no growth of the file,
        // and as many blocks as the deletes need once the WAL starts over.
        let other = JSONValue.string(String(repeating: "w", count: 3000))
        try f.put((0..<50).map { (ref("c", "k\($0)"), ["text": other]) })
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let store: Store = f.store, key = ref("c", "k0")
        Thread {
            _ = try? store.read { r in
                _ = try r.get(key)
                holding.signal()
                release.wait()
            }
            ended.signal()
        }.start()
        holding.wait()
        Tmpfs.fill(f.dir + "/state/filler")
        // Before: the write-back waited the pool's busy timeout (10 s) for the reader, holding
        // the writer, then failed with the plain "disk full".
        let refused = expectCode(.storageFull) {
            try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k1")) }
        }
        release.signal()
        ended.wait()
        #expect(refused?.message.contains("a reader holds the WAL") == true, "\(refused?.message ?? "")")
        try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k1")) }
        try f.store.write(freesSpace: true) { try $0.delete(ref("c", "k2")) }
        #expect(try !f.exists(ref("c", "k1")) && !f.exists(ref("c", "k2")))
    }

    @Test(
        "on a full disk deletes go on after the reserve is used up: the WAL is written back and starts over in its own blocks"
    )
    func deletesGoOnPastTheReserve() throws {
        let f = try fixtureOnTmpfs(mib: 8)  // a reserve of 512 KiB: 128 pages of WAL
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "v", count: 300))
        let refs = (0..<600).map { ref("c", "k\($0)") }
        for chunk in stride(from: 0, to: refs.count, by: 200) {
            try f.put(refs[chunk..<chunk + 200].map { ($0, ["text": text]) })
        }
        #expect(try f.store.checkpoint())  // an empty WAL: every page a commit writes needs new blocks
        Tmpfs.fill(f.dir + "/state/filler")
        // One commit each: together far more WAL than the reserve holds. Today: storage_full
        // once the reserve is used up.
        for r in refs { try f.store.write(freesSpace: true) { try $0.delete(r) } }
        #expect(try refs.allSatisfy { try !f.exists($0) })
        #expect(
            f.store.takeSpaceNotices().contains {
                $0.message.contains("wrote the WAL back so that a delete can commit")
            })
    }

    @Test(
        "vacuum without room on the disk for the compacted copy is refused up front, saying what it needs, and the disk is left as it was"
    )
    func vacuumRefusedWithoutRoom() throws {
        let f = try fixtureOnTmpfs(mib: 8)
        defer { Tmpfs.unmount(f.dir + "/state") }
        let text = JSONValue.string(String(repeating: "v", count: 100_000))
        try f.put((0..<20).map { (ref("c", "k\($0)"), ["text": text]) })  // about 2 MiB in use
        #expect(try f.store.checkpoint())
        let filler = f.dir + "/state/filler"
        Tmpfs.fill(filler)
        #expect(truncate(filler, off_t(fileSize(filler) - (1 << 20))) == 0)  // 1 MiB free
        let before = (fileSize(f.dbPath), fileSize(f.dbPath + "-wal"), freeBytes(f.dir + "/state"))
        let refused = expectCode(.storageFull) { try f.store.vacuum() }
        #expect(refused?.message.contains("vacuum needs") == true, "\(refused?.message ?? "")")
        // Today: the VACUUM fills the free MiB with its WAL and fails.
        #expect((fileSize(f.dbPath), fileSize(f.dbPath + "-wal"), freeBytes(f.dir + "/state")) == before)
        #expect(truncate(filler, 0) == 0)
        _ = try f.store.vacuum()
    }
}
