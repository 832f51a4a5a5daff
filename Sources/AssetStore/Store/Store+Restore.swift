// The restore (`assetctl --db PATH --config CONFIG restore`, assetctl(1)): a marked copy
// made live again, and what the live database did after the backup that the copy cannot know.
// A file the copy queued may have been taken again by a put acknowledged after the backup,
// and the files of such puts are orphans to the copy: the copy's queued unlinks are held
// (and policy runs paused) until an admin runs `sweep --release-restore`, and the orphan pass keeps files changed since the backup
// (less files.orphan_grace) until `verify --delete-orphans --since-backup`. The commit
// counter moves past any number the source gave after the backup (docs/DESIGN.md, The unlink pipeline, item 8).

import Foundation
import GRDB
import Glibc

/// What `Store.restore` did.
public struct RestoreOutcome: Sendable {
    /// The mark removed; nil for a copy made otherwise (restored with `force`).
    public var mark: String?
    /// The last commit the copy holds, and the first the restored store gives.
    public var commit: Int64
    public var nextCommit: Int64
    /// When the backup was taken (wall seconds); nil when the copy does not say.
    public var taken: Double?
    /// Queued unlinks held until an admin's `sweep --release-restore`.
    public var held: Int
    /// The highest queue row id held.
    var heldThrough: Int64?
}

extension Store {
    static let backupSourceKey = "backup.source"
    static let backupTakenKey = "backup.taken"
    /// "restored from commit N taken at T": the restore's record.
    static let restoredKey = "restored"
    /// The highest queue row id held; rows at or below it wait for an admin's sweep.
    static let restoreHeldQueueKey = "restored.held_queue"
    /// Orphans changed after this (wall seconds, less the grace) are kept; 0: taken at an unknown time.
    static let restoreOrphansKey = "restored.orphans_after"

    /// A restored store numbers its commits from `restoreCommitGap` past the larger of the
    /// copy's last and the restore's Unix second times this (more commits a second than any
    /// store makes): past every commit its source, or an earlier restore of the same copy,
    /// gave after the backup (docs/DESIGN.md, The unlink pipeline, item 8).
    static let commitsPerSecondBound: Int64 = 1 << 20
    static let restoreCommitGap: Int64 = 1 << 32

    /// Makes a backup copy a live database again (the restore): removes the mark, records
    /// the restore and holds what the copy cannot judge. Refused (`conflict`) unless `force`
    /// on a file that is no marked copy, or whose mark names another source than
    /// `configuredSource` (the config's `store.path`, compared by real path).
    public func restore(configuredSource: String, force: Bool) throws -> RestoreOutcome {
        try checkWritable()
        let now = configuration.clock()
        let outcome = try Store.mapErrors {
            try pool.write { db -> Result<RestoreOutcome, StoreError> in
                func meta(_ key: String) throws -> String? {
                    try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
                }
                let mark = try meta(Store.copyMarkKey)
                if mark == nil && !force {
                    return .failure(
                        StoreError(
                            .conflict,
                            "\(path) is not a backup copy (no mark of `assetctl backup`): nothing restored. A copy made"
                                + " otherwise (cp, sqlite3 .backup, a snapshot) is restored with --force",
                            detail: ["not_a_copy": true]))
                }
                let source = try meta(Store.backupSourceKey) ?? mark.flatMap(Store.markedSource)
                if let source, !force, Store.realName(source) != Store.realName(configuredSource) {
                    return .failure(
                        StoreError(
                            .conflict,
                            "\(path) is a backup of \(source), not of this config's store.path \(configuredSource):"
                                + " nothing restored (another instance's backup would make its files the roots'). Pass"
                                + " the config of the daemon it was taken from, or --force",
                            detail: ["other_source": true]))
                }
                let commit = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'commit'") ?? 0
                let taken = try Double.fetchOne(
                    db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.backupTakenKey])
                let next =
                    max(commit, Int64(max(0, min(now, 4e9))) * Store.commitsPerSecondBound) + Store.restoreCommitGap
                let heldThrough = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM unlink_queue")
                let held = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unlink_queue") ?? 0
                let when = taken.map { Store.isoTime($0) } ?? "an unknown time"
                let record = "restored from commit \(commit) taken at \(when)" + (source.map { " of \($0)" } ?? "")
                try db.execute(
                    sql: "DELETE FROM meta WHERE key IN (?, ?, ?)",
                    arguments: [Store.copyMarkKey, Store.backupSourceKey, Store.backupTakenKey])
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'commit'", arguments: [next - 1])
                try db.execute(
                    sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?), (?, ?)",
                    arguments: [Store.restoredKey, record, Store.restoreOrphansKey, taken ?? 0])
                // Set with an empty queue too: it also pauses policy runs (Store+Policies.swift).
                try db.execute(
                    sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    arguments: [Store.restoreHeldQueueKey, heldThrough ?? 0])
                return .success(
                    RestoreOutcome(
                        mark: mark, commit: commit, nextCommit: next, taken: taken, held: held, heldThrough: heldThrough
                    ))
            }
        }.get()
        // A write outside the commit count: synced here, not by makeDurable.
        try syncWAL(force: true)
        state.withLock {
            $0.copyMark = nil
            $0.restoreHold = RestoreHold(queueThrough: outcome.heldThrough ?? 0, orphansAfter: outcome.taken ?? 0)
        }
        return outcome
    }

    /// The source path in a mark "backup of PATH at commit N" (a backup from before the
    /// source had a key of its own).
    static func markedSource(_ mark: String) -> String? {
        guard mark.hasPrefix("backup of "), let at = mark.range(of: " at commit ", options: .backwards) else {
            return nil
        }
        return String(mark[mark.index(mark.startIndex, offsetBy: 10)..<at.lowerBound])
    }

    static func isoTime(_ t: Double) -> String {
        let f = ISO8601DateFormatter()
        return f.string(from: Date(timeIntervalSince1970: t))
    }

    /// Reads the restore's holds at open, and says what they hold.
    func readRestoreHold() throws {
        let (record, queue, orphans, held) = try Store.mapErrors {
            try pool.read { db in
                let sql = "SELECT value FROM meta WHERE key = ?"
                let queue = try Int64.fetchOne(db, sql: sql, arguments: [Store.restoreHeldQueueKey])
                let held =
                    try queue.flatMap {
                        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unlink_queue WHERE id <= ?", arguments: [$0])
                    } ?? 0
                return (
                    try String.fetchOne(db, sql: sql, arguments: [Store.restoredKey]), queue,
                    try Double.fetchOne(db, sql: sql, arguments: [Store.restoreOrphansKey]), held
                )
            }
        }
        guard queue != nil || orphans != nil else { return }
        state.withLock { $0.restoreHold = RestoreHold(queueThrough: queue, orphansAfter: orphans) }
        var holds = [String]()
        if queue != nil {
            holds.append(
                "\(held) unlinks the copy queued are held, and policy runs, evict and expire delete nothing,"
                    + " until an admin runs `assetctl sweep --release-restore` (a file a put acknowledged after"
                    + " the backup took again would go: see `assetctl pending`, and `assetctl forget` the ones"
                    + " to keep)")
        }
        if orphans != nil {
            holds.append(
                "`verify --delete-orphans` keeps the files changed since the backup (those of writes the restore"
                    + " lost) until `assetctl verify --delete-orphans --since-backup`")
        }
        state.withLock {
            $0.openWarnings.append(
                "\(path) was \(record ?? "restored from a backup"): " + holds.joined(separator: "; "))
        }
    }

    /// Ends the hold of the restore on its queued unlinks and policy runs (an admin's
    /// `sweep --release-restore`; a plain sweep, as the shipped cron runs as root, never does).
    func releaseQueueHold() throws {
        guard state.withLock({ $0.restoreHold?.queueThrough }) != nil else { return }
        try Store.mapErrors {
            try pool.write { db in
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [Store.restoreHeldQueueKey])
            }
        }
        state.withLock { $0.restoreHold?.queueThrough = nil }
    }

    /// Ends the hold of the restore on orphans (`verify --delete-orphans --since-backup`).
    func releaseOrphanHold() throws {
        guard state.withLock({ $0.restoreHold?.orphansAfter }) != nil else { return }
        try Store.mapErrors {
            try pool.write { db in
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [Store.restoreOrphansKey])
            }
        }
        state.withLock { $0.restoreHold?.orphansAfter = nil }
    }

    /// Queue rows at or below this id wait for an admin's sweep (0: none held).
    /// Every row while the hold lasts, those queued after the restore too: a client deleting a
    /// restored object whose file a lost put took again queues it anew, as does a put that
    /// replaces it, and nothing tells those from a delete of a file of its own.
    var heldQueueThrough: Int64 { state.withLock { $0.restoreHold?.queueThrough } != nil ? .max : 0 }

    /// Orphans changed after this are kept (the backup's time), nil: no hold.
    var orphansHeldAfter: Double? { state.withLock { $0.restoreHold?.orphansAfter } }

    /// Why `path` may not be restored, looked at before it is opened (nothing written yet): not
    /// a database, not the config's `store.path` (`force` never passes it: a restore done
    /// where the backup lies turns its header to WAL mode, so once copied beside a crash's
    /// log the guard that tells a copy by its rollback header no longer sees it), or a
    /// non-empty `-wal` beside it (the live database's crash log, whose pages the open would
    /// mix into the copy's: quick_check does not see every such mix).
    public static func restoreRefusal(_ path: String, configuredSource: String) -> StoreError? {
        if let why = notADatabase(path) { return StoreError(.conflict, why, detail: ["not_a_database": true]) }
        if let refusal = notInPlace(path, configuredSource) { return refusal }
        // A running daemon's -wal is its live log: never one to tell the admin to remove.
        let lockFD = Glibc.open(realName(path) + ".lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if lockFD >= 0 {
            defer { Glibc.close(lockFD) }
            if flock(lockFD, LOCK_SH | LOCK_NB) != 0 {
                return StoreError(.busy, "\(path) is open in assetd or another process: stop it, then restore")
            }
        }
        let wal = fileSize(path + "-wal")
        guard wal <= 0 else {
            return StoreError(
                .conflict,
                "\(path)-wal (\(wal) bytes) lies beside \(path): nothing restored. A restore never reads a"
                    + " log in: one left by the live database's crash would mix its pages with the copy's. With"
                    + " assetd stopped, remove \(path)-wal and \(path)-shm, then run restore again",
                detail: ["wal_beside": true])
        }
        return nil
    }

    static func notInPlace(_ path: String, _ configuredSource: String) -> StoreError? {
        guard realName(path) != realName(configuredSource) else { return nil }
        return StoreError(
            .conflict,
            "\(path) is not this config's store.path \(configuredSource): nothing restored. Put the copy in"
                + " place first (with assetd stopped: remove the -wal and -shm beside store.path, copy the"
                + " backup over it), then run restore on store.path",
            detail: ["not_in_place": true])
    }

    // MARK: opens that must not make a database

    /// Why `path` is no database to open for `assetctl --db` (nil: it may be one). SQLite
    /// takes an empty file for an empty database, and the open would give it a fresh schema:
    /// a `cp` cut short by a full disk would then verify "clean" and its roots' files be orphans.
    static func notADatabase(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }  // missing: assetctl says so itself
        // A -wal beside it changes nothing: a WAL-mode database always has its first page in
        // the file, and opening would have SQLite drop that log.
        if st.st_size == 0 {
            return "\(path) is empty: not an assetd database (a copy cut short?); nothing was written to it"
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var magic = [UInt8](repeating: 0, count: 16)
        if st.st_size > 0, pread(fd, &magic, 16, 0) != 16 || magic != Array("SQLite format 3\0".utf8) {
            return "\(path) is not an SQLite database, so not an assetd database; nothing was written to it"
        }
        guard st.st_size > 0, !hasAssetdSchema(path) else { return nil }
        return "\(path) is an SQLite database but not an assetd one (no meta table, or no migration v1 in"
            + " grdb_migrations); nothing was written to it"
    }
}

/// What a restore holds until an admin says otherwise (Store+Restore.swift).
struct RestoreHold {
    /// Queue rows at or below this id are not unlinked until an admin's sweep.
    var queueThrough: Int64?
    /// Orphans changed after this (wall seconds; 0: any time) are kept.
    var orphansAfter: Double?
}
