// A queued file whose look (FileClaim.identify) ends on a transient error (EMFILE, EIO) is not
// taken as gone or as not the caller's: its row owes the look, the sweep takes it again, and
// fails and backs off while it still cannot. The EMFILE is the walk's open failed through its
// test hook (`FileProbe.lookFailures`): a real one needs a full descriptor table, which would
// fail every other test running in this process at the same time. A look taken late takes
// only a file older than the look, by a margin (OwedLook.swift): tests that mean the file
// made before the delete to be taken date the owed look later (`oweLater`).

import GRDB
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct TransientLookTests {
    /// Whether the fixtures' folder (/tmp) is on a filesystem whose times the late look
    /// trusts (`OwedLook.keepsLocalTimes`): elsewhere (an overlayfs in a container) it takes
    /// nothing, so the tests that mean it to take a file cannot run.
    static let localTimes: Bool = {
        let fd = open("/tmp", SafeUnlinker.oPath | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return OwedLook.keepsLocalTimes(fd)
    }()

    /// Runs `body` with the walk's look at `path` (below `root`, or the root's statx) failing
    /// with `e`.
    func failing<T>(_ root: String, _ path: String, _ e: Int32, _ body: () throws -> T) rethrows -> T {
        FileProbe.lookFailures.withLock { $0[root] = { $0 == path ? e : nil } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.lookFailures.withLock { $0[root] = nil } }
        return try body()
    }

    /// Puts `c/k` holding `path` in a transaction judged for the caller (enforce_ownership).
    func holdChecked(_ f: Fixture, _ path: String) throws {
        try f.store.write { tx in
            tx.fileReferenceCheck = FileReferenceCheck(uid: getuid(), owner: "u\(getuid())") { _ in nil }
            try tx.put(ref("c", "k"), value: ["file": .string(path)])
        }
    }

    @Test(
        "a file registered before it existed, its look at the delete failing with EMFILE, is unlinked later",
        .enabled(if: TransientLookTests.localTimes))
    func unclaimedLookRetried() throws {
        let f = try Fixture()
        let path = f.root + "/a/later.bin"
        try f.hold(path, key: "k")
        _ = try f.makeFile("a/later.bin")
        let queued = try failing(f.root, path, EMFILE) { try f.delete(ref("c", "k")).filesQueued }
        #expect(queued == [path])
        let row = try #require(try f.store.pending().first)
        #expect(row.lastError?.contains("EMFILE") == true, "\(String(describing: row.lastError))")
        try f.oweLater()
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path], "skipped: \(sweep.skipped)")
        #expect(!f.exists(path))
    }

    @Test(
        "a claimed file whose look fails with EMFILE at the delete and at the sweep fails, then goes",
        .enabled(if: TransientLookTests.localTimes))
    func claimedLookRetried() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        try failing(f.root, path, EMFILE) {
            #expect(try f.delete(ref("c", "k")).filesQueued == [path])
            try f.oweLater()
            let sweep = try f.store.sweep()
            #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep.skipped)")
            let failed = try #require(sweep.failed.first)
            #expect(failed.path == path && failed.attempts == 1)
            #expect(failed.error.contains("EMFILE"), "\(failed.error)")
            #expect(sweep.pending == 1)
        }
        #expect(f.exists(path))
        let sweep = try f.store.sweep(retryFailed: true)
        #expect(sweep.unlinked == [path], "skipped: \(sweep.skipped), failed: \(sweep.failed)")
        #expect(!f.exists(path))
    }

    @Test("a claimed file whose look fails for good (EACCES) is still not taken")
    func claimedLookRefused() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        let queued = try failing(f.root, path, EACCES) { try f.delete(ref("c", "k")).filesQueued }
        #expect(queued == [path])
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(f.exists(path))
    }

    @Test("a claimed row that owes its look names no file meanwhile: an older assetd reads the identity alone")
    func owedRowNamesNoFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        try failing(f.root, path, EMFILE) { _ = try f.delete(ref("c", "k")) }
        let q = try DatabaseQueue(path: f.dbPath)
        defer { try? q.close() }
        let row = try #require(try q.read { try Row.fetchOne($0, sql: "SELECT * FROM unlink_queue") })
        for column in ["device", "inode", "birth", "generation", "ctime"] {
            #expect((row[column] as DatabaseValue).isNull, "\(column): \(row)")
        }
        #expect((row["identify"] as String?) != nil)
    }

    @Test(
        "an owed look whose root is not configured at the sweep stays owed, and is taken once it is",
        .enabled(if: TransientLookTests.localTimes))
    func owedLookWaitsForItsRoot() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        try failing(f.root, path, EMFILE) { _ = try f.delete(ref("c", "k")) }
        try f.oweLater()
        let roots = f.configuration.roots
        let other = f.dir + "/other"
        #expect(mkdir(other, 0o755) == 0)
        f.configuration.roots = [other]
        try f.reopen()
        let away = try f.store.sweep(retryFailed: true)
        #expect(away.unlinked.isEmpty && away.skipped.isEmpty, "\(away.skipped)")
        #expect(try f.store.pending().count == 1)
        #expect(f.exists(path))
        f.configuration.roots = roots
        try f.reopen()
        let back = try f.store.sweep(retryFailed: true)
        #expect(!f.exists(path), "skipped: \(back.skipped), failed: \(back.failed)")
    }

    @Test(
        "a root whose statx fails with EIO at the delete owes the look: the file is unlinked later",
        .enabled(if: TransientLookTests.localTimes))
    func rootStatusFailureOwed() throws {
        let f = try Fixture()
        let path = f.root + "/a/later.bin"
        try f.hold(path, key: "k")
        _ = try f.makeFile("a/later.bin")
        let queued = try failing(f.root, f.root, EIO) { try f.delete(ref("c", "k")).filesQueued }
        #expect(queued == [path])
        let row = try #require(try f.store.pending().first)
        #expect(row.lastError?.contains("EIO") == true, "\(String(describing: row.lastError))")
        try f.oweLater()
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path], "skipped: \(sweep.skipped)")
        #expect(!f.exists(path))
    }
    @Test(
        "verify's repair of an unreferenced claimed row whose look fails with EMFILE queues it, owed",
        .enabled(if: TransientLookTests.localTimes))
    func repairOwesTheLook() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        try f.damage("DELETE FROM edge WHERE is_file = 1")
        let fixed = try failing(f.root, path, EMFILE) { try f.verify(repair: true) }
        #expect(fixed.commit?.filesQueued == [path], "\(fixed.problems)")
        let row = try #require(try f.store.pending().first)
        #expect(row.lastError?.contains("EMFILE") == true, "\(String(describing: row.lastError))")
        #expect(f.exists(path))
        try f.oweLater()
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }
    @Test("a put of a file under a root whose statx fails with EIO registers it missing, as before")
    func rootStatusFailurePutMissing() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/there.bin")
        try failing(f.root, f.root, EIO) { _ = try f.hold(path, key: "k") }
        let report = try #require(try f.fileReport(path))
        #expect(report.record.missing, "\(report.record)")
    }
}

extension Fixture {
    /// Changes every owed look of the queue, through a connection of its own.
    func changeOwedLooks(_ change: (inout OwedLook) -> Void) throws {
        let q = try DatabaseQueue(path: dbPath)
        defer { try? q.close() }
        try q.write { db in
            for row in try Row.fetchAll(db, sql: "SELECT id, identify FROM unlink_queue WHERE identify IS NOT NULL") {
                var look = try #require(OwedLook(text: row["identify"]))
                change(&look)
                let id: Int64 = row["id"]
                try db.execute(sql: "UPDATE unlink_queue SET identify = ? WHERE id = ?", arguments: [look.text, id])
            }
        }
    }

    /// Dates every owed look 10 s later, well past the margin: the files and folders made
    /// before it are older than the look.
    func oweLater() throws { try changeOwedLooks { $0.since += 10_000_000_000 } }
}
