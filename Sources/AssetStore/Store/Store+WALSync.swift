// The store's own fdatasync of the WAL, which makes commits durable with durability "full".
//
// Linux reports a writeback error once to each open descriptor of the file, and to a
// descriptor opened afterwards only if no one has been told yet. A sync through a descriptor
// opened for it could therefore succeed right after another sync (SQLite's own, of the WAL
// in a checkpoint, or a concurrent one of ours) had been told its pages were lost, and
// acknowledge commits that are not on disk (PostgreSQL's "fsyncgate"). So the WAL is opened
// once, with the store, and kept: that descriptor hears of every error from then on. Syncs
// through it take turns, and each first looks for a recorded failure: one descriptor hears
// of an error once, so a sync right after the failed one would succeed.
//
// A restart is told nothing of a failure the last run was told of, and pages the kernel
// could not write may still be in its cache, marked clean: recovery would read them as if
// on disk, the first sync would "confirm" them, and new commits would follow a hole where a
// power loss ends the WAL. So a WAL left by the last run is checkpointed at open: its frames
// go into the database file, which SQLite syncs, and the WAL starts over. A clean close
// empties the WAL, so that is rare: a crash, a failed sync, or a reader that kept the
// closing checkpoint from finishing.

import CSideFiles
import Foundation
import GRDB
import GRDBSQLite
import Glibc
import Synchronization

/// The WAL, opened for syncing, and which file it is.
final class WALDescriptor: Sendable {
    let fd: Int32
    let device: UInt64
    let inode: UInt64

    init(fd: Int32, device: UInt64, inode: UInt64) {
        self.fd = fd
        self.device = device
        self.inode = inode
    }

    deinit { Glibc.close(fd) }
}

/// What `syncWAL` keeps between syncs.
struct WALSyncState {
    /// Nil once the store is closed (and on a read-only store).
    var descriptor: WALDescriptor?
    /// The writer's commit count (``CommitCounter``) read before the last fdatasync that
    /// succeeded: every commit it counted is on disk.
    var syncedCommits: UInt64 = 0
}

extension Store {
    /// Opens the WAL for syncing, before anything is written, and with `settling` (the WAL
    /// had frames before the pool opened: the last run ended without its closing checkpoint)
    /// writes it back. SQLite keeps the WAL for as long as a connection is open, so this
    /// descriptor stays valid until the store closes. `first` runs once it is open, before
    /// the WAL is written back.
    func openWALDescriptor(settling: Bool, first: () throws -> Void = {}) throws {
        // The file SQLite has open and writes: by name, but never through a symlink, never
        // hanging on a FIFO, and refused if the folder's owner put another file there since
        // (the guard, side_files.c, noted which one SQLite opened). Else the syncs would
        // confirm commits that SQLite wrote to a file no one syncs.
        let file = Store.realName(path) + "-wal"
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(.permissionDenied, "cannot open \(file): \(errnoDescription(errno))") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw StoreError(.permissionDenied, "cannot read \(file): \(errnoDescription(e))")
        }
        var seenDevice: UInt64 = 0
        var seenInode: UInt64 = 0
        let seen = assetd_side_files_wal_seen(file, &seenDevice, &seenInode) != 0
        guard st.st_mode & S_IFMT == S_IFREG, st.st_nlink == 1,
            !seen || (seenDevice == UInt64(st.st_dev) && seenInode == UInt64(st.st_ino))
        else {
            Glibc.close(fd)
            throw StoreError(
                .conflict,
                "cannot open \(file): it is not the WAL SQLite opened (replaced, linked, or not a regular file); remove"
                    + " it and open again")
        }
        let wal = WALDescriptor(fd: fd, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        walSync.withLock { $0.descriptor = wal }
        try first()
        if settling { try settleLeftoverWAL() }
    }

    /// The checkpoint of a WAL the last run left (see the top of this file). A reader of
    /// another process can keep it from finishing (a backup or replication tool may read all
    /// the time): then the store opens anyway, says so, and syncs the frames instead, as it
    /// did before this check existed. Refusing to start for as long as such a reader runs
    /// would trade a daemon that cannot start for a loss that needs a failed sync first.
    /// On a full disk (the database file cannot grow by the WAL's pages) the frames are
    /// synced too, and the store opens for reads; the reserve is kept for deletes.
    private func settleLeftoverWAL() throws {
        let done: Bool
        do {
            done = try checkpointing("writing back the WAL the last run left") { db in
                try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") == 0
            }
        } catch let e as StoreError where e.code == .storageFull {
            state.withLock {
                $0.openWarnings.append(
                    "the WAL the last run left could not be written back: the disk holding \(path) is full; its frames"
                        + " are synced instead. Reads are served; writes answer storage_full until there is room"
                        + " (deletes and policy runs can still commit, through the reserve)")
            }
            return
        }
        if !done {
            state.withLock {
                $0.openWarnings.append(
                    "the WAL the last run left (it crashed, a sync failed, or a reader kept its closing checkpoint"
                        + " from finishing) could not be written back: another process is reading \(path); its frames"
                        + " are synced instead, which cannot bring back pages a failed sync of that run lost")
            }
        }
    }

    /// Writes the WAL the last run left back into the database file before the pool opens,
    /// with a connection of SQLite's own VFS that closes after (see `openPool`): nil once
    /// every frame is in the database file and synced, else why not. Only the store's writer
    /// writes: the caller holds the store lock (Store.init takes it first). Another process's
    /// reader may keep the WAL from starting over: `settleLeftoverWAL` then says so.
    static func writeBackLeftoverWAL(_ path: String) -> String? {
        var h: OpaquePointer?
        defer { sqlite3_close_v2(h) }
        var rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        if rc == SQLITE_OK {
            sqlite3_busy_timeout(h, 1000)
            // A fresh connection learns the database is in WAL mode only once it has read it.
            rc = sqlite3_exec(h, "PRAGMA schema_version", nil, nil, nil)
        }
        var log: Int32 = -1
        var copied: Int32 = -1
        if rc == SQLITE_OK { rc = sqlite3_wal_checkpoint_v2(h, "main", SQLITE_CHECKPOINT_TRUNCATE, &log, &copied) }
        switch rc & 0xff {
        case SQLITE_OK: return nil
        case SQLITE_BUSY where log > 0 && copied == log: return nil
        case SQLITE_FULL:
            return "the disk was full when the store opened: the WAL the last run left could not be written back"
        default:
            let why = h.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            return "the WAL the last run left could not be written back when the store opened: \(why)"
        }
    }

    /// Runs `body` (a checkpoint, VACUUM) on the writer, outside a transaction and with no
    /// background checkpoint running. Refused after a failed sync, checked on the writer:
    /// neither is a commit the writer's commit observer sees. A sync of SQLite's that fails
    /// in it is recorded as the store's: from then on writes are refused.
    func checkpointing<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        try checkpointer.exclusive {
            try Store.mapErrors {
                do {
                    return try pool.writeWithoutTransaction { db in
                        try checkNoSyncFailure()
                        return try body(db)
                    }
                } catch let e as DatabaseError where e.extendedResultCode == .SQLITE_IOERR_FSYNC {
                    checkpointer.recordSyncFailure("\(what): \(e.message ?? "sync failed")")
                    throw e
                }
            }
        }
    }

    #if DEBUG
    /// Debug builds only, for tests of a running assetd: if the file this variable names
    /// exists when the WAL is synced, it is removed and the sync fails with EIO.
    static let syncFailpoint = ProcessInfo.processInfo.environment["ASSETD_DEBUG_FAIL_WAL_SYNC"]
    #endif

    /// fdatasync of the WAL: every commit counted (by ``CommitCounter``, once its COMMIT has
    /// returned) before the call is on disk when it returns. `force`: an fdatasync even if an
    /// earlier one covered every counted commit, for a caller that cannot tell whether its
    /// commit is counted yet.
    func syncWAL(force: Bool = false) throws(StoreError) {
        let file = path + "-wal"
        // The commit is visible but may not be on disk: the caller must not acknowledge it, nor
        // run it again.
        func unsynced(_ what: String) -> StoreError {
            StoreError(
                .internalError, "the commit could not be synced to disk (\(what))", detail: .object(["unsynced": true]))
        }
        // Every commit that ended before this call, the caller's among them.
        let target = commits.value.load(ordering: .acquiring)
        try walSync.withLock { (s: inout WALSyncState) throws(StoreError) in
            if let failure = syncFailure { throw unsynced("an earlier sync failed: \(failure)") }
            guard let wal = s.descriptor else { throw StoreError(.internalError, "the store is closed") }
            // SQLite writes the file it opened; a restart reads the one at the path.
            var st = stat()
            let found = stat(file, &st) == 0
            guard found, UInt64(st.st_dev) == wal.device, UInt64(st.st_ino) == wal.inode else {
                let why =
                    "\(file) is no longer the WAL the store writes: " + (found ? "replaced" : errnoDescription(errno))
                checkpointer.recordSyncFailure(why)
                throw unsynced(why)
            }
            // A sync that began after those commits has covered them (group commit).
            if !force && s.syncedCommits >= target { return }
            let upTo = commits.value.load(ordering: .acquiring)
            var ok = fdatasync(wal.fd) == 0
            var e = errno
            let injected = injectedSyncError.exchange(0, ordering: .relaxed)
            if injected != 0 { (ok, e) = (false, injected) }
            #if DEBUG
            if let trigger = Store.syncFailpoint, unlink(trigger) == 0 { (ok, e) = (false, EIO) }
            #endif
            state.withLock { $0.walSynced }?()
            guard ok else {
                let why = "fdatasync \(file): \(errnoDescription(e))"
                checkpointer.recordSyncFailure(why)
                throw unsynced(why)
            }
            s.syncedCommits = max(s.syncedCommits, upTo)
            walSyncs.add(1, ordering: .relaxed)
        }
    }

    /// The mark of the database at `path` if its header says rollback mode (a backup copy as
    /// `backup` writes it) and no WAL lies beside it, read without writing anything; nil
    /// otherwise. `assetctl --db` opens such a copy read-only: a look never turns its header to
    /// WAL mode (the foreign-WAL guard tells a copy by that header) nor upgrades its schema.
    static func peekCopyMark(_ path: String) -> String? {
        guard fileSize(path + "-wal") <= 0 else { return nil }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var header = [UInt8](repeating: 0, count: 20)
        let read = pread(fd, &header, 20, 0)
        Glibc.close(fd)
        guard read == 20, header[18] == 1, header[19] == 1 else { return nil }
        var h: OpaquePointer?
        defer { sqlite3_close_v2(h) }
        guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            return nil
        }
        var s: OpaquePointer?
        defer { sqlite3_finalize(s) }
        guard sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key = 'backup'", -1, &s, nil) == SQLITE_OK,
            sqlite3_step(s) == SQLITE_ROW, let text = sqlite3_column_text(s, 0)
        else { return nil }
        return String(cString: text)
    }

    /// Why the WAL left beside `path` must not be written into it: read through it (a
    /// read-only connection, which never checkpoints, so the file stays as it is), the
    /// database fails `PRAGMA quick_check`. Our own crash's log continues the very pages it
    /// was written against and passes; another database's log (a copy put in place beside
    /// the live run's) mixes its pages with the copy's (docs/DESIGN.md, The unlink pipeline, item 7).
    static func checkLeftoverWAL(_ path: String) -> String? {
        var h: OpaquePointer?
        defer { sqlite3_close_v2(h) }
        var rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        var found = [String]()
        if rc == SQLITE_OK {
            sqlite3_busy_timeout(h, 10_000)
            var s: OpaquePointer?
            rc = sqlite3_prepare_v2(h, "PRAGMA quick_check(5)", -1, &s, nil)
            while rc == SQLITE_OK {
                let step = sqlite3_step(s)
                if step == SQLITE_DONE { break }
                guard step == SQLITE_ROW else {
                    rc = step
                    break
                }
                if let t = sqlite3_column_text(s, 0) { found.append(String(cString: t)) }
            }
            sqlite3_finalize(s)
        }
        // Only a damaged result is this check's to report: any other failure (a side file the
        // guard refuses, a busy lock) the open meets again and names itself.
        let damaged = rc & 0xff == SQLITE_CORRUPT || rc & 0xff == SQLITE_NOTADB
        guard rc == SQLITE_OK || damaged else { return nil }
        let why =
            damaged
            ? (h.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc)))
            : found == ["ok"] ? nil : found.joined(separator: "; ")
        guard let why else { return nil }
        return "\(path) read through the \(path)-wal left beside it fails SQLite's quick_check (\(why)): that"
            + " log is another database's (a copy put in place beside the -wal the live database left) or the"
            + " disk damaged it. Nothing was written. With assetd stopped: if a copy was put in place, remove"
            + " \(path)-wal and \(path)-shm and open it again; otherwise restore the last backup"
    }

    /// Whether the database at `path`, read through a read-only connection before the lock,
    /// the reserve and the pool (which would switch it to WAL mode for good), has assetd's
    /// schema; true when it cannot be told (the open then names the trouble itself).
    static func hasAssetdSchema(_ path: String) -> Bool {
        var h: OpaquePointer?
        defer { sqlite3_close_v2(h) }
        guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            return true
        }
        sqlite3_busy_timeout(h, 10_000)
        func count(_ sql: String) -> Int64? {
            var s: OpaquePointer?
            defer { sqlite3_finalize(s) }
            guard sqlite3_prepare_v2(h, sql, -1, &s, nil) == SQLITE_OK, sqlite3_step(s) == SQLITE_ROW else {
                return nil
            }
            return sqlite3_column_int64(s, 0)
        }
        guard
            let tables = count(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'grdb_migrations')")
        else { return true }
        guard tables == 2 else { return false }
        return (count("SELECT COUNT(*) FROM grdb_migrations WHERE identifier = 'v1'") ?? 1) > 0
    }
}
