// The mark `backup` leaves in its copy (meta key `backup`): a copy's unlink queue, policies
// and orphan walk would act on the live roots, where the files it lists as unreferenced may be
// held again by the live database. A marked store never sweeps, runs a real policy run or
// deletes orphans, and opens only for a caller that says it expects a copy (`assetctl --db`);
// `restore` (`assetctl --db PATH restore`, Store+Restore.swift) makes it a live database again.

import GRDB
import Glibc

extension Store {
    /// The meta key of the mark; its value says what the copy was made from.
    static let copyMarkKey = "backup"

    /// The mark of a backup copy (what it was copied from), or nil for a live database.
    public var copyMark: String? { state.withLock { $0.copyMark } }

    /// Reads the mark at open; a marked store opened to write by a caller that does not
    /// expect a copy (the daemon) is refused. Read-only, it acts on nothing anyway.
    func readCopyMark() throws {
        let mark = try Store.mapErrors {
            try pool.read { db in
                try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.copyMarkKey])
            }
        }
        state.withLock { $0.copyMark = mark }
        guard let mark, !configuration.opensCopies, !configuration.readOnly else { return }
        throw StoreError(
            .conflict,
            "\(path) is a backup copy (\(mark)): not opened, since its unlink queue and policies would act on"
                + " the live roots. To restore it, with assetd stopped, put it in place (remove the -wal and -shm"
                + " files the live database left beside it) and run"
                + " `assetctl --db \(path) --config CONFIG restore` (CONFIG: the daemon's) first",
            detail: ["backup_copy": true])
    }

    /// Why `path` must not be opened: a database last written outside WAL mode (its header's
    /// bytes 18 and 19 are 1, as a backup copy's are; a store once opened has 2) with a
    /// write-ahead log beside it. SQLite reads any WAL at the path into the database, so that
    /// log is another database's (the live one's, left when a backup was copied over it), and
    /// its frames would replace the copy's pages, its copy mark among them.
    static func foreignWAL(_ path: String) -> String? {
        guard fileSize(path + "-wal") > 0 else { return nil }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var header = [UInt8](repeating: 0, count: 20)
        guard pread(fd, &header, 20, 0) == 20, header[18] == 1, header[19] == 1 else { return nil }
        return "\(path) is not a write-ahead-log database (a backup copy?) but \(path)-wal lies beside it,"
            + " another database's log that opening would write into it: with assetd stopped, remove"
            + " \(path)-wal and \(path)-shm (the copy holds everything it needs), then open it again"
    }

    /// True for a marked copy, and for a file other than the database the config names:
    /// either one's queue lists files the live database may hold again.
    public var isCopy: Bool { copyMark != nil || configuration.configuredDatabase != nil }

    /// Throws unless the store is a live database: `what` is never done on a copy.
    func checkNotCopy(_ what: String) throws(StoreError) {
        if state.withLock({ $0.copyMark }) != nil {
            throw StoreError(
                .conflict,
                "\(path) is a backup copy: no \(what) on it (its files are the live roots'). To restore it,"
                    + " with assetd stopped, put it in place and run `assetctl --db PATH --config CONFIG restore`"
                    + " (CONFIG: the daemon's) first")
        }
        guard let configured = configuration.configuredDatabase else { return }
        throw StoreError(
            .conflict,
            "\(path) is not the database the config names (store.path = \(configured)): no \(what) on it, since"
                + " a copy's queue would act on the live roots. Pass the daemon's --config; to restore a copy, with"
                + " assetd stopped, put it in place and run `assetctl --db PATH --config CONFIG restore`")
    }

    /// Whether `error` is the refusal at open of a marked copy, or of a WAL that is not the
    /// database's (assetd exits 78 on either: only an admin can put it right).
    public static func isCopyRefusal(_ error: StoreError) -> Bool {
        error.code == .conflict && (error.detail?["backup_copy"] == true || error.detail?["foreign_wal"] == true)
    }

    /// Whether `error`, at open, is one only an admin mends (assetd exits 78 on it, so that
    /// systemd does not restart it for ever): a marked copy or another database's log beside
    /// it, a schema a newer assetd wrote, a damaged database, a root bound elsewhere, an
    /// upgrade the disk has no room for.
    public static func isAdminRefusal(_ error: StoreError) -> Bool {
        isCopyRefusal(error) || isRootRefusal(error) || isUpgradeRefusal(error)
            || ["newer_schema", "corrupt"].contains { error.detail?[$0] == true }
    }

    /// Marks the database at `path` (a backup's copy, not yet linked in place) as a copy of
    /// `source` taken at `taken` (wall seconds, read before its snapshot): what a restore
    /// compares with the config's `store.path` and holds files by (Store+Restore.swift).
    static func markCopy(_ db: Database, source: String, commit: Int64, taken: Double) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?), (?, ?), (?, ?)",
            arguments: [
                copyMarkKey, "backup of \(source) at commit \(commit)", backupSourceKey, source, backupTakenKey,
                taken,
            ])
    }
}
