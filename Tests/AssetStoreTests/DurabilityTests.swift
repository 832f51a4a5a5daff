// Durability settings reach the connection that commits (assetd.toml(5), [store] durability;
// assetd(8), The unlink queue).

import CWALCoalesce
import Foundation
import GRDB
import GRDBSQLite
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// Runs `body` with the next sync SQLite makes of `f`'s files failing with EIO.
private func failingNextSync(of f: Fixture, _ body: () throws -> Void) rethrows {
    assetd_wal_coalesce_fail_syncs(f.dbPath, 1)
    defer { assetd_wal_coalesce_fail_syncs(nil, 0) }
    try body()
}

// Serialized: the VFS's sync fault hook (assetd_wal_coalesce_fail_syncs) is one for the
// process, and one test setting or clearing it would take another's faults away.
@Suite(.serialized) struct DurabilityTests {
    @Test("the writer commits with synchronous NORMAL: with durability full the store syncs the WAL itself")
    func writerSynchronous() throws {
        for durability in [StoreConfiguration.Durability.full, .normal] {
            let f = try Fixture { $0.durability = durability }
            #expect(try f.store.write { tx in try Int.fetchOne(tx.db, sql: "PRAGMA synchronous") }.value == 1)
            try f.reopen()
            #expect(try f.store.write { tx in try Int.fetchOne(tx.db, sql: "PRAGMA synchronous") }.value == 1)
        }
    }

    @Test("with durability full, every write syncs the WAL before it returns and records its commit as durable")
    func fullSyncsEachWrite() throws {
        let f = try Fixture { $0.durability = .full }
        for i in 0..<5 {
            let before = f.store.walSyncs.load(ordering: .relaxed)
            let commit = try f.put([(ref("c", "k\(i)"), ["i": .int(Int64(i))])]).commit
            #expect(f.store.walSyncs.load(ordering: .relaxed) == before + 1)
            #expect(f.store.durableCommit == commit)
        }
    }

    @Test("with durability normal, a write syncs nothing")
    func normalSyncsNothing() throws {
        let f = try Fixture { $0.durability = .normal }
        let before = f.store.walSyncs.load(ordering: .relaxed)
        let commit = try f.put([(ref("c", "k"), 1)]).commit
        #expect(f.store.walSyncs.load(ordering: .relaxed) == before)
        #expect(f.store.durableCommit < commit)
    }

    @Test("with durability normal, a queued file is unlinked only after the sweep syncs its commit")
    func normalWaitsForSync() throws {
        let f = try Fixture { $0.durability = .normal }
        let path = try f.makeFile("n/file")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        let commit = try f.delete(ref("c", "k")).commit
        #expect(f.store.durableCommit < commit)
        #expect(f.exists(path))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(f.store.durableCommit == commit)
        #expect(!f.exists(path))
    }

    @Test("a sweep with nothing due only reads: it syncs nothing and reports the queue")
    func idleSweepOnlyReads() throws {
        let f = try Fixture { c in
            c.durability = .normal
            c.unlinkDelay = 60
        }
        let path = try f.makeFile("n/later")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        let commit = try f.delete(ref("c", "k")).commit
        let report = try f.store.sweep()
        #expect(report.unlinked.isEmpty && report.pending == 1)
        #expect(f.store.durableCommit < commit)
        f.clock.advance(61)
        #expect(try f.store.sweep().unlinked == [path])
        #expect(f.store.durableCommit == commit)
    }

    @Test("a WAL moved away under the store: the write fails unsynced (committed, not to be run again) and writes stop")
    func movedWALStopsWrites() throws {
        let f = try Fixture { $0.durability = .full }
        let first = try f.put([(ref("c", "a"), 1)]).commit
        let wal = f.dbPath + "-wal"
        // SQLite goes on writing the file it opened, which a restart would not find.
        #expect(rename(wal, wal + ".aside") == 0)
        var error: StoreError?
        do {
            try f.put([(ref("c", "b"), 2)])
        } catch let e as StoreError {
            error = e
        }
        #expect(rename(wal + ".aside", wal) == 0)
        #expect(error?.isUnsynced == true, "\(String(describing: error))")
        #expect(try f.store.read { try $0.lastCommit() } == first + 1)
        #expect(f.store.durableCommit == first)
        #expect(
            f.store.syncFailure?.contains("no longer the WAL") == true, "\(String(describing: f.store.syncFailure))")
        #expect(throws: StoreError.self) { try f.put([(ref("c", "c"), 3)]) }
    }

    @Test("after an fdatasync of the WAL fails, nothing more is acknowledged or written until the store is reopened")
    func failedSyncRefusesWrites() throws {
        let f = try Fixture { $0.durability = .full }
        let first = try f.put([(ref("c", "a"), 1)]).commit
        // The kernel may drop the pages a failed fdatasync could not write (and a later one
        // then succeeds without them): a success after a failure proves nothing.
        f.store.injectedSyncError.store(EIO, ordering: .relaxed)
        var failed: StoreError?
        do { try f.put([(ref("c", "b"), 2)]) } catch let e as StoreError { failed = e }
        #expect(failed?.isUnsynced == true, "\(String(describing: failed))")
        var refused: StoreError?
        do { try f.put([(ref("c", "c"), 3)]) } catch let e as StoreError { refused = e }
        #expect(refused?.message.contains("restart") == true, "\(String(describing: refused))")
        #expect(refused?.isUnsynced == false, "refused before it began: nothing committed")
        #expect(throws: StoreError.self) { try f.store.syncCommitted(first + 1) }
        #expect(f.store.durableCommit == first)
        #expect(try f.store.read { try $0.lastCommit() } == first + 1)
        #expect(try f.store.read { try $0.exists(ref("c", "a")) }, "reads go on")
        #expect(f.store.syncFailure?.contains("fdatasync") == true)
        // No checkpoint either: it could copy pages the kernel dropped, read back stale, into
        // the database file (a restart's recovery checks every frame instead).
        let unchanged = try Data(contentsOf: URL(fileURLWithPath: f.dbPath))
        #expect(throws: StoreError.self) { try f.store.checkpoint() }
        #expect(throws: StoreError.self) { try f.store.vacuum() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.dbPath)) == unchanged)

        try f.reopen()
        #expect(f.store.syncFailure == nil)
        let next = try f.put([(ref("c", "d"), 4)]).commit
        #expect(f.store.durableCommit == next)
    }

    @Test("a sync that starts while another fails waits for it and fails too, though its own fdatasync would succeed")
    func syncBehindFailedSync() throws {
        // Linux tells each descriptor of a failed writeback once: a second sync must not
        // succeed on its own, before the first has recorded what it was told.
        let f = try Fixture { $0.durability = .full }
        let first = try f.put([(ref("c", "a"), 1)]).commit
        _ = try f.store.write(syncing: false) { tx in try tx.put(ref("c", "b"), value: 2) }
        let inside = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        f.store.state.withLock {
            $0.walSynced = {
                inside.signal(); _ = resume.wait(timeout: .now() + 10)
            }
        }
        f.store.injectedSyncError.store(EIO, ordering: .relaxed)
        let results = Mutex<[String: Bool]>([:])  // which sync succeeded
        let store = try #require(f.store)
        // Threads of their own: a blocked dispatch worker may hold the next block back.
        let failing = Thread {
            let ok = (try? store.syncCommitted(first + 1)) != nil
            results.withLock { $0["failing"] = ok }
        }
        failing.start()
        // The first has failed its fdatasync and not yet recorded it.
        try #require(inside.wait(timeout: .now() + 10) == .success)
        f.store.state.withLock { $0.walSynced = nil }
        let secondThread = Mutex<pid_t>(0)
        let second = Thread {
            secondThread.withLock { $0 = currentThreadID() }
            let ok = (try? store.syncCommitted(first + 1)) != nil
            results.withLock { $0["second"] = ok }
        }
        second.start()
        // Asleep on the WAL sync's lock (a second that did not wait would end instead).
        _ = pollFor { secondThread.withLock { $0 } != 0 }
        #expect(threadSleeps(secondThread.withLock { $0 }), "the second sync waits for the first")
        #expect(results.withLock { $0["second"] } == nil, "the second sync waits for the first")
        resume.signal()
        let deadline = Date().addingTimeInterval(60)
        while results.withLock({ $0.count }) < 2 && Date() < deadline { usleep(10_000) }
        #expect(results.withLock { $0 } == ["failing": false, "second": false])
        #expect(f.store.durableCommit == first)
    }

    @Test("the WAL is synced through the descriptor opened with the store; a WAL replaced under it stops writes")
    func walDescriptorKept() throws {
        let f = try Fixture { $0.durability = .full }
        let opened = try #require(f.store.walSync.withLock { $0.descriptor })
        for i in 0..<5 { try f.put([(ref("c", "k\(i)"), .int(Int64(i)))]) }
        #expect(f.store.walSync.withLock { $0.descriptor } === opened)
        // Another file at the path (never SQLite's doing while the store is open): SQLite writes
        // the old one, so syncing either proves nothing about what a restart reads.
        let wal = f.dbPath + "-wal"
        #expect(rename(wal, wal + ".old") == 0)
        try FileManager.default.copyItem(atPath: wal + ".old", toPath: wal)
        var error: StoreError?
        do { try f.put([(ref("c", "x"), 1)]) } catch let e as StoreError { error = e }
        #expect(error?.isUnsynced == true, "\(String(describing: error))")
        #expect(f.store.syncFailure?.contains("replaced") == true, "\(String(describing: f.store.syncFailure))")
        #expect(rename(wal + ".old", wal) == 0)
    }

    @Test("the sweep's sync is a real fdatasync even when a reader sees a commit its writer has not yet counted")
    func makeDurableSyncsUncountedCommit() throws {
        let f = try Fixture { $0.durability = .normal }
        let path = try f.makeFile("m/file")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        try f.store.makeDurable()  // a sync that covers every commit counted so far
        let writer = f.store.pool.writeWithoutTransaction { $0.sqliteConnection! }
        let inside = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        onWriteUnlock(writer) {
            inside.signal()
            _ = resume.wait(timeout: .now() + 10)
        }
        let store = try #require(f.store)
        let done = Atomic<Bool>(false)
        Thread {
            _ = try? store.write { tx in try tx.delete(ref("c", "k")) }
            done.store(true, ordering: .releasing)
        }.start()
        try #require(inside.wait(timeout: .now() + 10) == .success)
        onWriteUnlock(writer, nil)
        // The delete is published (readers see it, its file is queued) but its COMMIT has not
        // returned, so the commit count leaves it out: only an fdatasync now covers it.
        let before = f.store.walSyncs.load(ordering: .relaxed)
        try f.store.makeDurable()
        #expect(f.store.walSyncs.load(ordering: .relaxed) == before + 1)
        #expect(f.store.durableCommit == (try f.store.read { try $0.lastCommit() }))
        resume.signal()
        while !done.load(ordering: .acquiring) { usleep(1_000) }
    }

    @Test("a WAL moved away under the store: the sweep stops writes and unlinks nothing")
    func movedWALStopsSweep() throws {
        let f = try Fixture { $0.durability = .normal }
        let path = try f.makeFile("m/file")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        try f.delete(ref("c", "k"))
        let wal = f.dbPath + "-wal"
        #expect(rename(wal, wal + ".aside") == 0)
        #expect(throws: StoreError.self) { try f.store.sweep() }
        #expect(rename(wal + ".aside", wal) == 0)
        #expect(f.exists(path), "the delete is only in a WAL a restart would not find")
        #expect(
            f.store.syncFailure?.contains("no longer the WAL") == true, "\(String(describing: f.store.syncFailure))")
    }

    @Test("a store closed cleanly leaves an empty WAL, so the next open settles nothing and waits for no reader")
    func cleanCloseLeavesNothingToSettle() throws {
        let f = try Fixture { $0.durability = .full }
        for i in 0..<20 { try f.put([(ref("c", "k\(i)"), .int(Int64(i)))]) }
        f.store.close()
        #expect(Store.fileSize(f.dbPath + "-wal") == 0)
        // Another process reading: a write-back (TRUNCATE) at open would wait for it and fail.
        var reader: OpaquePointer?
        #expect(sqlite3_open_v2(f.dbPath, &reader, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(reader) }
        #expect(sqlite3_exec(reader, "BEGIN; SELECT COUNT(*) FROM object", nil, nil, nil) == SQLITE_OK)
        let started = Date()
        try f.reopen()
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(try f.store.read { try $0.objectCount() } == 20)
        sqlite3_exec(reader, "COMMIT", nil, nil, nil)
    }

    @Test("after a failed sync, with every commit durable, the sweep unlinks nothing and no write of any kind commits")
    func failedSyncStopsEveryWrite() throws {
        let f = try Fixture { $0.durability = .full }
        let path = try f.makeFile("m/file")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        try f.delete(ref("c", "k"))  // durable, its file due
        failingNextSync(of: f) { #expect(throws: StoreError.self) { try f.store.checkpoint() } }
        #expect(f.store.syncFailure != nil)
        #expect(f.store.durableCommit == (try f.store.read { try $0.lastCommit() }))
        let wal = Store.fileSize(f.dbPath + "-wal")
        #expect(throws: StoreError.self) { try f.store.sweep() }
        #expect(f.exists(path))
        #expect(throws: StoreError.self) { _ = try f.store.forgetQueued([path]) }
        // Even a write that checks nothing itself: the commit is refused at the last moment.
        #expect(throws: StoreError.self) {
            try f.store.pool.write { db in try db.execute(sql: "DELETE FROM unlink_queue") }
        }
        #expect(Store.fileSize(f.dbPath + "-wal") == wal, "nothing was written")
        #expect(try f.store.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM unlink_queue") } == 1)
    }

    @Test("after a failed sync, verify --delete-orphans is refused before it unlinks anything")
    func failedSyncStopsOrphanDeletion() throws {
        let f = try Fixture { $0.durability = .full }
        let orphan = try f.makeFile("orphan.bin")
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: f.clock.now - f.configuration.orphanGrace - 10)],
            ofItemAtPath: orphan)
        try f.put([(ref("c", "a"), 1)])
        failingNextSync(of: f) { #expect(throws: StoreError.self) { try f.store.checkpoint() } }
        var o = VerifyOptions()
        o.orphans = true
        #expect(try f.store.verify(o).found == 1, "a read-only verify still runs")
        o.deleteOrphans = true
        f.tagRoots()  // refused for the failed sync, not for want of the tag
        #expect(throws: StoreError.self) { try f.store.verify(o) }
        #expect(f.exists(orphan))
    }

    @Test("a vacuum whose sync fails stops writes, as a checkpoint's does")
    func failedVacuumSyncRefusesWrites() throws {
        let f = try Fixture { $0.durability = .full }
        try f.put([(ref("c", "a"), 1)])
        failingNextSync(of: f) { #expect(throws: StoreError.self) { try f.store.vacuum() } }
        #expect(f.store.syncFailure?.contains("vacuum") == true, "\(String(describing: f.store.syncFailure))")
        #expect(throws: StoreError.self) { try f.put([(ref("c", "b"), 2)]) }
    }

    @Test("a WAL the last run left that a reader keeps from being written back: the store opens, says so, and syncs it")
    func leftoverWALBehindReader() throws {
        let f = try Fixture { $0.durability = .full }
        for i in 0..<20 { try f.put([(ref("c", "k\(i)"), .int(Int64(i)))]) }
        f.store.close(checkpoint: false)  // as if a reader had kept the closing checkpoint from finishing
        #expect(Store.fileSize(f.dbPath + "-wal") > 0)
        var reader: OpaquePointer?
        #expect(sqlite3_open_v2(f.dbPath, &reader, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(reader) }
        #expect(sqlite3_exec(reader, "BEGIN; SELECT COUNT(*) FROM object", nil, nil, nil) == SQLITE_OK)
        try f.reopen()  // waits for the reader up to the busy timeout (10 s), then goes on
        #expect(f.store.openWarnings.count == 1)
        #expect(f.store.openWarnings.first?.contains("could not be written back") == true)
        #expect(f.store.durableCommit == (try f.store.read { try $0.lastCommit() }), "synced instead")
        try f.put([(ref("c", "more"), 1)])
        sqlite3_exec(reader, "COMMIT", nil, nil, nil)
    }

    @Test("a checkpoint whose sync fails (an explicit one, or one in the background) stops writes too")
    func failedCheckpointSyncRefusesWrites() throws {
        // Explicit: SQLite's own sync of the WAL before it copies, or of the database after.
        let f = try Fixture { $0.durability = .full }
        try f.put([(ref("c", "a"), 1)])
        failingNextSync(of: f) { #expect(throws: StoreError.self) { try f.store.checkpoint() } }
        #expect(f.store.syncFailure?.contains("checkpoint") == true)
        #expect(throws: StoreError.self) { try f.put([(ref("c", "b"), 2)]) }
        #expect(try !f.store.read { try $0.exists(ref("c", "b")) })

        // In the background: past 4,000 WAL frames, on the checkpointer's own connection.
        let g = try Fixture { $0.durability = .full }
        assetd_wal_coalesce_fail_syncs(g.dbPath, 1_000_000)
        defer { assetd_wal_coalesce_fail_syncs(nil, 0) }
        let filler = String(repeating: "x", count: 3000)  // about a page per object
        var i = 0
        while g.store.syncFailure == nil && i < 1000 {
            do {
                try g.put((0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(filler)]) })
            } catch let e as StoreError {
                // The failure came while this write waited for its sync: committed, not durable.
                #expect(e.isUnsynced, "\(e)")
            }
            g.store.checkpointer.drain()
            i += 1
        }
        #expect(g.store.syncFailure != nil, "no checkpoint ran after \(i) writes")
        #expect(throws: StoreError.self) { try g.put([(ref("c", "late"), 1)]) }
    }

    @Test("a sync asked for commits an earlier sync already covered does not sync again (group commit)")
    func coveredSyncSkipped() throws {
        let f = try Fixture { $0.durability = .full }
        let a = try f.store.write(syncing: false) { tx in try tx.put(ref("c", "a"), value: 1) }.report.commit
        let b = try f.store.write(syncing: false) { tx in try tx.put(ref("c", "b"), value: 2) }.report.commit
        let before = f.store.walSyncs.load(ordering: .relaxed)
        try f.store.syncCommitted(b)
        #expect(f.store.walSyncs.load(ordering: .relaxed) == before + 1)
        try f.store.syncCommitted(a)  // began after b's sync had covered it
        #expect(f.store.walSyncs.load(ordering: .relaxed) == before + 1)
        try f.put([(ref("c", "c"), 3)])  // a commit since: synced
        #expect(f.store.walSyncs.load(ordering: .relaxed) == before + 2)
    }

    @Test("a WAL left by the last run (a crash) is written back into the database file at open, and starts over")
    func leftoverWALWrittenBackAtOpen() throws {
        let f = try Fixture { $0.durability = .full }
        for i in 0..<20 { try f.put([(ref("c", "k\(i)"), .int(Int64(i)))]) }
        // What a crash leaves: the database file and a WAL holding the commits.
        let copy = f.dir + "/crash"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: f.dbPath + suffix, toPath: copy + "/db" + suffix)
        }
        let left = try #require(try FileManager.default.attributesOfItem(atPath: copy + "/db-wal")[.size] as? Int)
        #expect(left > 0)
        let store = try Store(path: copy + "/db", configuration: StoreConfiguration(roots: [f.root]))
        defer { store.close() }
        // Pages a failed sync of the last run could not write may still be in the page cache,
        // and this process would not be told: written to the database file now, and synced.
        #expect(try FileManager.default.attributesOfItem(atPath: copy + "/db-wal")[.size] as? Int == 0)
        #expect(try store.read { try $0.objectCount() } == 20)
    }

    @Test("making commits durable keeps SQLite's locks on the database file (it never opens and closes that file)")
    func makeDurableKeepsLocks() throws {
        let f = try Fixture { $0.durability = .normal }
        try f.put([(ref("c", "k"), 1)])
        // Probed with an open-file-description lock, which conflicts with this process's own
        // POSIX locks. The probe's descriptor is never closed: closing any descriptor of the
        // file would drop those locks itself.
        let probe = open(f.dbPath, O_RDWR | O_CLOEXEC)
        #expect(probe >= 0)
        func sharedRangeHeld() -> Bool {
            var lk = flock()
            lk.l_type = Int16(F_WRLCK)
            lk.l_whence = Int16(SEEK_SET)
            lk.l_start = 0x4000_0002  // SQLite's shared-lock range
            lk.l_len = 510
            let ofdGetLock: Int32 = 36  // F_OFD_GETLK, not exported to Swift
            guard fcntl(probe, ofdGetLock, &lk) == 0 else { return false }
            return lk.l_type != Int16(F_UNLCK)
        }
        _ = try f.store.read { try $0.get(ref("c", "k")) }
        #expect(sharedRangeHeld(), "an open WAL connection holds a shared lock on the database file")
        try f.store.makeDurable()
        #expect(sharedRangeHeld())
        _ = try f.store.sweep()
        #expect(sharedRangeHeld())
    }
}
