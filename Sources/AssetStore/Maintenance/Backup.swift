// `backup` and `vacuum` (assetd(8), CONTROL PROTOCOL, Methods; assetctl(1), COMMANDS). A
// backup copies one read snapshot with SQLite's online backup API into a temp file beside
// the target, synced and then renamed to the final name without replacing it, so a crash
// never leaves half a backup there, nor the copy with two names; writers go on meanwhile.
// What a killed backup left (its temp file) the next backup to the same name removes. The copy is marked (Store+CopyMark.swift): assetd starts
// on it only once `assetctl --db PATH restore` has removed the mark.

import Foundation
import GRDB
import JSON
import Synchronization

extension Store {
    /// The root `folder` is or lies below, as given or with symbolic links resolved.
    static func rootHolding(folder: String, _ roots: [String]) -> String? {
        func real(_ p: String) -> String? {
            guard let r = realpath(p, nil) else { return nil }
            defer { free(r) }
            return String(cString: r)
        }
        let here = real(folder)
        return roots.first { root in
            let there = real(root)
            return [(folder, root), (here, there), (here, root)].contains { pair in
                // By bytes: "/" and a combining mark after it are one Character to a String.
                guard let a = pair.0, let b = pair.1 else { return false }
                let root = b.utf8.last == UInt8(ascii: "/") ? String(decoding: b.utf8.dropLast(), as: UTF8.self) : b
                return a.utf8.elementsEqual(root.utf8) || ManagedRoots.isBelow(a, root)
            }
        }
    }

    /// Pages copied per backup step (progress is reported after each).
    static let backupPagesPerStep: CInt = 1024

    /// Writes a consistent copy of the store to a new single-file database at `path`, marked
    /// as a copy (a `Store` opens it only with `opensCopies`, until `clearCopyMark`); writers
    /// go on meanwhile. An existing `path` is `conflict`; a relative one is taken from the
    /// current folder. `progress` gets pages copied and total after each step. Returns
    /// `{path, bytes, commit}`: the commit is the last one the copy holds.
    ///
    /// The copy is written to `.<name>.tmp-<pid>-<random>` beside `path` first. A backup
    /// killed meanwhile leaves that behind, so each backup first removes the temp files of
    /// earlier backups to the same name whose process is gone (see `removeStaleBackupTemps`).
    public func backup(
        to path: String, progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
    ) throws -> JSONValue {
        try checkOpen()
        let target = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let folder = (target as NSString).deletingLastPathComponent
        let name = (target as NSString).lastPathComponent
        // No object holds it: the orphan pass would delete it, and a client could register it.
        if let root = Store.rootHolding(folder: folder, roots.paths) {
            throw StoreError(
                .invalidParams, "\(target) is inside the managed root \(root): a backup there is an orphan",
                detail: .string(target))
        }
        // Before the check: a backup killed after its link left the name taken and its temp file.
        Store.removeStaleBackupTemps(folder: folder, name: name)
        var st = stat()
        if lstat(target, &st) == 0 { throw StoreError(.conflict, "\(target) already exists", detail: .string(target)) }
        let temp = folder + "/." + name + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        func removeTemp() {
            for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temp + suffix) }
        }
        let commit: Int64
        do {
            // The source is a read-only connection of its own, not one of the pool's: GRDB
            // calls `progress` inside the copy's read, and there the pool would refuse (trap
            // on) any use of the store by the callback.
            var config = Configuration()
            config.readonly = true
            config.busyMode = .timeout(10)
            // Before the snapshot: a restore holds the files changed since (Store+Restore.swift).
            let taken = configuration.clock()
            let source = try DatabaseQueue(path: self.path, configuration: config)
            defer { try? source.close() }
            let copy = try DatabaseQueue(path: temp)
            do {
                // SQLite restarts a stepwise copy whenever another connection writes between
                // steps, so on a busy store it might never end. Steps give progress while the
                // store is quiet; at the first restart the copy is redone in one step, which
                // holds one read snapshot throughout (writers go on; the WAL keeps it).
                var last = 0
                do {
                    try source.backup(to: copy, pagesPerStep: Store.backupPagesPerStep) { p in
                        guard p.completedPageCount > last else { throw BackupRestarted() }
                        last = p.completedPageCount
                        progress?(p.completedPageCount, p.totalPageCount)
                    }
                } catch is BackupRestarted {
                    try source.backup(to: copy, pagesPerStep: -1) { p in
                        progress?(max(last, p.completedPageCount), max(last, p.totalPageCount))
                    }
                }
                // One file: the copy keeps no WAL beside it; Store turns WAL back on when it opens it.
                // Leases the source grants after the copy are numbered from its block: a store
                // started on the copy numbers past them (LeaseNumbers.swift).
                try copy.writeWithoutTransaction { db in
                    _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
                    try db.execute(
                        sql: "UPDATE meta SET value = value + ? WHERE key = ? AND value < ?",
                        arguments: [
                            Store.backupLeaseGap, Store.leaseNumbersKey, Int64.max - 2 * Store.backupLeaseGap,
                        ])
                }
                commit = try copy.read { db in
                    try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'commit'") ?? 0
                }
                // Marked: opened, the copy must not act on the live roots (Store+CopyMark.swift).
                try copy.write { db in try Store.markCopy(db, source: self.path, commit: commit, taken: taken) }
                try copy.close()
            } catch {
                try? copy.close()
                throw error
            }
            try Store.sync(temp)
            try Store.nameBackup(temp, as: target)
            try Store.sync(folder)
        } catch let e as StoreError {
            removeTemp()
            throw e
        } catch let e as DatabaseError {
            removeTemp()
            switch e.resultCode {
            case .SQLITE_FULL: throw StoreError(.storageFull, "the disk holding \(target) is full")
            case .SQLITE_CANTOPEN:
                // SQLite does not say why; the folder usually does (missing, not writable).
                let why = access(folder, W_OK) == 0 ? "" : ": \(errnoDescription(errno))"
                throw StoreError(.permissionDenied, "cannot create a file in \(folder)\(why)")
            default:
                throw StoreError(.internalError, "backup to \(target) failed: database error \(e.resultCode.rawValue)")
            }
        } catch {
            removeTemp()
            throw StoreError(.internalError, "backup to \(target) failed: \(error)")
        }
        return .object(["path": .string(target), "bytes": .int(Store.fileSize(target)), "commit": .int(commit)])
    }

    /// Gives the synced copy at `temp` the name `target`, or fails with `conflict` if the name
    /// was taken meanwhile (never replacing it). Renamed with RENAME_NOREPLACE, the copy never
    /// has two names: linked and then unlinked, a backup killed between the two left it with
    /// its temp name too, a database with two names, which `assetctl --db PATH restore`
    /// refuses. Where the filesystem has no such rename (NFS, many FUSE filesystems), it is
    /// still linked and unlinked; the temp name such a kill leaves, the next backup to the
    /// same name removes (`removeStaleBackupTemps`).
    static func nameBackup(_ temp: String, as target: String) throws(StoreError) {
        let refused = Store.backupRenaming.withLock { $0 }?(target)
        if refused == nil, renameNoReplace(temp, target) == 0 {
            Store.backupNamed.withLock { $0 }?(target)
            return
        }
        var e = refused ?? errno
        if e == EINVAL || e == ENOSYS {
            // link, not rename: it fails if the name was taken meanwhile instead of replacing it.
            if link(temp, target) == 0 {
                Store.backupNamed.withLock { $0 }?(target)
                unlink(temp)
                return
            }
            e = errno
        }
        if e == EEXIST { throw StoreError(.conflict, "\(target) already exists", detail: .string(target)) }
        throw StoreError(.permissionDenied, "rename to \(target): \(errnoDescription(e))")
    }

    /// Tests: asked with the target before a backup's copy is renamed to it; an errno it
    /// returns stands for the rename's (EINVAL: a filesystem without RENAME_NOREPLACE).
    static let backupRenaming = Mutex<(@Sendable (String) -> Int32?)?>(nil)
    /// Tests: runs with the target as soon as the copy has that name.
    static let backupNamed = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Removes from `folder` what killed backups to `name` left: regular files of this user
    /// named as a backup's temp files are (`.<name>.tmp-<pid>-<random>`, and the same with
    /// `-journal`, `-wal` or `-shm`) whose `<pid>` is no live process (`kill(pid, 0)` fails
    /// with `ESRCH`). Nothing else: no symlink, no other name, no file of a live backup (its
    /// own process's included). Best effort: what cannot be read or removed stays.
    static func removeStaleBackupTemps(folder: String, name: String) {
        let dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { return }
        defer { Glibc.close(dir) }
        // Listed first, removed after: entries removed while a listing is read may be skipped.
        var stale = [(file: [UInt8], pid: pid_t)]()
        let listing = dup(dir)
        guard listing >= 0 else { return }
        guard let stream = fdopendir(listing) else {
            Glibc.close(listing)
            return
        }
        let nameBytes = Array(name.utf8)
        while let entry = readdir(stream) {
            let file = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if let pid = Store.backupTempPID(file, name: nameBytes) { stale.append((file, pid)) }
        }
        closedir(stream)
        for (file, pid) in stale {
            errno = 0
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }  // alive (EPERM: someone else's)
            let cName = file.map { CChar(bitPattern: $0) } + [0]
            var st = stat()
            guard fstatat(dir, cName, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFREG,
                st.st_uid == geteuid()
            else { continue }
            unlinkat(dir, cName, 0)
        }
    }

    /// The pid in `file` if it is named exactly as a temp file of a backup to `name` is
    /// (`.<name>.tmp-<pid>-<random>`, optionally with `-journal`, `-wal` or `-shm`), else nil.
    static func backupTempPID(_ file: [UInt8], name: [UInt8]) -> pid_t? {
        let prefix = Array(".".utf8) + name + Array(".tmp-".utf8)
        guard file.count > prefix.count, file.starts(with: prefix) else { return nil }
        var rest = file[prefix.count...]
        for suffix in ["-journal", "-wal", "-shm"] where rest.reversed().starts(with: suffix.utf8.reversed()) {
            rest = rest.dropLast(suffix.utf8.count)
            break
        }
        let parts = rest.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        func digits(_ p: ArraySlice<UInt8>) -> String? {
            guard !p.isEmpty, p.count <= 10, p.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                return nil
            }
            return String(decoding: p, as: UTF8.self)
        }
        guard parts.count == 2, let pidText = digits(parts[0]), let random = digits(parts[1]),
            UInt32(random) != nil, let pid = Int32(pidText), pid > 0
        else { return nil }
        return pid
    }

    /// Rewrites the database compactly (`VACUUM` on the writer, then a checkpoint that
    /// truncates the WAL). Returns `{bytes_before, bytes_after}`: database plus WAL.
    public func vacuum() throws -> JSONValue {
        try checkWritable()
        try checkRoomForVacuum()
        let before = Store.fileSize(path) + Store.fileSize(path + "-wal")
        try checkpointing("vacuum") { db in
            try db.execute(sql: "VACUUM")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let after = Store.fileSize(path) + Store.fileSize(path + "-wal")
        return .object(["bytes_before": .int(before), "bytes_after": .int(after)])
    }

    /// VACUUM builds the compacted copy in memory (temp_store) and writes it whole through
    /// the WAL, which is on the database's disk: without room for it, it would fill the disk
    /// and fail, leaving the WAL it grew. Refused up front instead, saying how much it needs:
    /// the pages in use, with their frame headers, and 1 MiB to spare (assetd(8), FULL DISK).
    func checkRoomForVacuum() throws {
        let (used, pageSize) = try read { r in
            let row = try Row.fetchOne(
                r.db,
                sql: "SELECT page_count - freelist_count AS used, page_size"
                    + " FROM pragma_page_count, pragma_freelist_count, pragma_page_size")
            return (row?["used"] as Int64? ?? 0, row?["page_size"] as Int64? ?? 4096)
        }
        let need = used * (pageSize + 24) + (1 << 20)
        // As for an upgrade: run as root, the blocks ext4 keeps for root are room too.
        guard let free = reserve.writable, free < need else { return }
        func mib(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        throw StoreError(
            .storageFull,
            "vacuum needs \(mib(need)) free on the disk holding \(path) (it writes the compacted database,"
                + " \(mib(used * pageSize)), through the write-ahead log) and there are \(mib(free)):"
                + " free space on that disk first; meanwhile puts reuse the database's free pages")
    }

    /// The size of a file, 0 if there is none.
    static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// fsyncs a file or folder.
    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(.internalError, "open \(path): \(errnoDescription(errno))") }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw StoreError(.internalError, "fsync \(path): \(errnoDescription(errno))") }
    }
}

/// Thrown from a backup step's callback to abandon a copy SQLite has restarted.
private struct BackupRestarted: Error {}
