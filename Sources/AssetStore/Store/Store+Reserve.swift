// A full disk. Every write then fails with SQLITE_FULL, and so would the delete meant to
// free space: its commit needs WAL pages, and so does the sweep that records the unlinks
// after. So the store keeps a reserve: a ballast file next to the database
// (`<database>.ballast`, `store.reserve` bytes, at most a sixteenth of the filesystem),
// allocated with posix_fallocate so it really holds blocks. A write that frees space (a
// delete, a policy run, a sweep, forgetting queued unlinks) that meets a full disk removes
// the ballast and runs once more; any other write (a put, a checkpoint) answers
// `storage_full` and leaves it, so nothing else eats the room deletes need. The ballast is
// allocated again once the filesystem has room for it and a little more, and twice its size
// counting the database's own free pages (what deletes freed inside the file, which puts
// reuse without growing it): the file never shrinks by itself (auto_vacuum is off), so a disk
// the database filled would otherwise never count as having room again.
// A delete that meets a full disk with the reserve gone (or too small for it) writes the WAL
// back and runs once more: the WAL then starts over in its own blocks. That write-back waits
// for no reader (a backup's snapshot would hold every write for the busy timeout), and it
// needs no new blocks only if the WAL holds no growth of the file (puts committed before
// space was seen low) and the filesystem overwrites in place (not btrfs or ZFS): else the
// delete is refused, saying why (assetd(8), FULL DISK).
//
// Low space also makes the WAL checkpoint sooner (Checkpointer.swift): a WAL left to grow
// to the usual thresholds (16 MiB, 64 MiB) can fill a small disk by itself.

import Foundation
import Glibc
import GRDB
import Synchronization

/// Something about the disk the daemon should log (the store has no logger).
public struct SpaceNotice: Sendable, Equatable {
    public enum Level: Sendable { case info, warning }
    public var level: Level
    public var message: String
}

/// The ballast file and what happened to it.
final class Reserve: Sendable {
    let path: String
    private let folder: String
    /// `store.reserve`.
    let wanted: Int64
    /// Who the ballast is given to (the database's owner, when root opens another's store).
    private let owner: StoreFileOwner?
    private let state = Mutex(State())

    struct State {
        var notices: [SpaceNotice] = []
        var lowSpace = false
        var full = false
        /// The ballast went to a write that frees space, and there has not been room since.
        var released = false
        /// A failed allocation was logged (once until one succeeds: `restore` runs every second).
        var allocationFailed = false
    }

    /// The file's size and the free space as the last growth check read them (only the
    /// writer's thread uses it): read again per MiB of growth or 100 ms, not per commit.
    struct Look {
        var file: Int64
        var free: Int64
        var pages: Int64
        var at: UInt64
    }
    let look = Mutex<Look?>(nil)

    init(database: String, wanted: Int64, owner: StoreFileOwner? = nil) {
        path = database + ".ballast"
        folder = (database as NSString).deletingLastPathComponent
        self.wanted = wanted
        self.owner = owner
    }

    /// Free and total bytes of the database's filesystem (f_bavail: what the disk has before
    /// the root-only blocks, so space counts as low a little early, never late).
    var space: (free: Int64, total: Int64)? {
        var vfs = statvfs()
        guard statvfs(folder, &vfs) == 0 else { return nil }
        let unit = UInt64(vfs.f_frsize)
        return (Int64(clamping: UInt64(vfs.f_bavail) &* unit), Int64(clamping: UInt64(vfs.f_blocks) &* unit))
    }

    /// Bytes the database's writes can still take: with euid 0 the root-only blocks too
    /// (f_bfree; ext4's reserved blocks are matched on fsuid, which the unit's capability
    /// bound does not change), else f_bavail. For refusing a schema upgrade: refused at
    /// f_bavail, a disk full for users but not for root kept a daemon that ran before down.
    var writable: Int64? {
        var vfs = statvfs()
        guard statvfs(folder, &vfs) == 0 else { return nil }
        return Reserve.writable(vfs, euid: geteuid())
    }

    static func writable(_ vfs: statvfs, euid: uid_t) -> Int64 {
        Int64(clamping: UInt64(euid == 0 ? vfs.f_bfree : vfs.f_bavail) &* UInt64(vfs.f_frsize))
    }

    /// The ballast's size on a filesystem of `total` bytes: the reserve must not take a
    /// small disk's room for itself.
    func size(total: Int64) -> Int64 { min(wanted, total / 16) }

    /// True while the ballast file exists.
    var isPresent: Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Room left on the filesystem beside a ballast just allocated (half the reserve, at most
    /// 512 KiB): the WAL of the puts the database's free pages take.
    static func headroom(_ size: Int64) -> Int64 { min(size, 1 << 20) / 2 }

    /// Allocates the ballast when it is missing, the filesystem has room for it and its
    /// headroom, and twice its size counting `freePages` (bytes of the database's free pages),
    /// or room for it alone with `freePages` twice its size (puts that reuse those pages need
    /// only WAL room, and a disk something else filled may never have the headroom again)
    /// (allocated under another name and renamed, so a ballast never holds less than it
    /// should); removes it when the reserve is configured off. True if it was allocated.
    @discardableResult
    func restore(freePages: Int64 = 0) -> Bool {
        state.withLock { s in
            guard wanted > 0 else {
                unlink(path)
                return false
            }
            guard !isPresent, let space, case let size = size(total: space.total), size > 0,
                space.free >= size + Reserve.headroom(size) && space.free + max(freePages, 0) >= 2 * size
                    || space.free >= size && freePages >= 2 * size
            else { return false }
            let fresh = path + ".new"
            // Names in the folder's descriptor: what is removed or renamed is in that folder,
            // not wherever its path leads by then (Store+Files.swift).
            let dir = StoreFileOwner.openFolder(of: path)
            guard dir >= 0 else { return false }
            defer { close(dir) }
            let name = StoreFileOwner.split(path).name
            let freshName = StoreFileOwner.split(fresh).name
            // Made anew, never opened through whatever is at the name (a symlink would be followed).
            unlinkat(dir, freshName, 0)
            let flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW
            guard
                case .file(let fd) = StoreFileOwner.create(
                    in: dir, freshName, path: fresh, flags: flags, mode: 0o600, owner: owner)
            else { return false }
            defer { close(fd) }
            let failed = posix_fallocate(fd, 0, off_t(size))
            guard failed == 0, renameat(dir, freshName, dir, name) == 0 else {
                let why = failed != 0 ? String(cString: strerror(failed)) : errnoDescription(errno)
                StoreFileOwner.removeIfNamed(fd, freshName, in: dir)
                if !s.allocationFailed {
                    s.notices.append(
                        SpaceNotice(level: .warning, message: "the reserve \(path) could not be allocated: \(why)"))
                }
                s.allocationFailed = true
                return false
            }
            s.allocationFailed = false
            return true
        }
    }

    /// Removes the ballast; true if there was one.
    func release() -> Bool {
        state.withLock { s in
            guard unlink(path) == 0 else { return false }
            s.released = true
            return true
        }
    }

    /// True from a release until there is room again.
    var wasReleased: Bool { state.withLock { $0.released } }

    /// Whether a write met a full disk since there was last room; true if that changed.
    func noteFull(_ full: Bool) -> Bool {
        state.withLock { s in
            defer {
                s.full = full
                if !full { s.released = false }
            }
            return s.full != full
        }
    }

    /// Whether the filesystem's free space is low (the checkpointer's thresholds shrink).
    func noteLowSpace(_ low: Bool) -> Bool {
        state.withLock { s in
            defer { s.lowSpace = low }
            return s.lowSpace != low
        }
    }

    func note(_ level: SpaceNotice.Level, _ message: String) {
        state.withLock { $0.notices.append(SpaceNotice(level: level, message: message)) }
    }

    func takeNotices() -> [SpaceNotice] {
        state.withLock { s in
            defer { s.notices = [] }
            return s.notices
        }
    }
}

extension Store {
    /// The pool's busy timeout: how long a write waits for another process's lock.
    static let busyTimeoutMilliseconds: Int32 = 10_000

    /// The ballast file's path (`<database>.ballast`).
    public var reservePath: String { reserve.path }

    /// True while the ballast file exists.
    public var reserveHeld: Bool { reserve.isPresent }

    /// Runs `body`, a write that frees space; if it meets a full disk, releases the reserve
    /// and runs it once more (SQLite rolled the failed transaction back). A policy run that
    /// failed after committing batches is not run again: those batches will free space.
    /// With `what` nil (a write that does not free space), the reserve stays. The first
    /// write to meet a full disk is logged, once until there is room again.
    func freeingSpace<T>(_ what: String?, _ body: () throws -> T) throws -> T {
        // The space the reserve gave back is for deletes and their sweeps until there is room
        // again: a put would take it, and the next delete meet a full disk with no reserve.
        if what == nil, reserve.wasReleased, !Store.insideFreeingWrite {
            throw StoreError(
                .storageFull,
                "the disk holding \(path) is full: its reserve went to a delete, and other writes wait for room")
        }
        // The writes a policy run or a sweep makes are part of it, whatever they say.
        let outermost = what != nil && !Store.insideFreeingWrite
        if outermost { Store.insideFreeingWrite = true }
        defer { if outermost { Store.insideFreeingWrite = false } }
        do {
            return try body()
        } catch let error where Store.isStorageFull(error) {
            if reserve.noteFull(true) {
                reserve.note(
                    .warning,
                    "the disk holding \(path) is full: writes answer storage_full until there is room;"
                        + " deletes and policy runs can still commit"
                        + (reserve.isPresent ? ", through the reserve" : ""))
            }
            var failed = error
            if let what, reserve.release() {
                reserve.note(.warning, "released the reserve \(reserve.path) so that \(what) can commit")
                do { return try body() } catch let again where Store.isStorageFull(again) { failed = again }
            }
            // No reserve left, or it was not enough (a small disk's reserve is less than the WAL
            // grows to between checkpoints): write the WAL back so that it starts over in its
            // own blocks, and run once more. Only a write that frees space, and only outermost
            // (a nested one runs inside its caller's write; the writer is not reentrant).
            guard what != nil, outermost else { throw failed }
            if let why = writeBack() {
                throw StoreError(
                    .storageFull,
                    "the disk holding \(path) is full and its reserve is used up: the WAL could not be written back"
                        + " to start over (\(why))")
            }
            reserve.note(.warning, "wrote the WAL back so that \(what ?? "a write") can commit on the full disk")
            return try body()
        }
    }

    /// With little free space, a write that does not free space commits only if the disk has
    /// twice what the database file must grow by at the next checkpoint (the WAL's frames come
    /// first): else that checkpoint could not finish, the WAL could not start over, and the
    /// reserve would go to the file's growth instead of to deletes (assetd(8), FULL DISK).
    /// Off the low-space path it costs one atomic load; on it, a cached page_count query,
    /// with the file's size and the free space (a stat and a statvfs) read again only once
    /// the file's pages moved by 1 MiB or 100 ms passed since the last look, as the
    /// checkpointer reads the free space per MiB of WAL; a refusal always reads them afresh.
    func checkGrowthRoom(_ db: Database) throws {
        guard checkpointer.lowSpace.load(ordering: .relaxed), !Store.insideFreeingWrite else { return }
        let pages =
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size")) ?? 0
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)  // the vDSO: no system call
        let at = UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
        func fresh() -> Reserve.Look? {
            guard let space = reserve.space else { return nil }
            return Reserve.Look(file: Store.fileSize(path), free: space.free, pages: pages, at: at)
        }
        func refuses(_ l: Reserve.Look) -> Bool { pages - l.file > 0 && l.free < 2 * (pages - l.file) }
        try reserve.look.withLock { cached in
            if let l = cached, abs(pages - l.pages) < Int64(Checkpointer.lowSpaceThreshold) * 4096,
                at &- l.at < 100_000_000, !refuses(l)
            {
                return
            }
            cached = fresh()
            guard let l = cached, refuses(l) else { return }
            throw StoreError(
                .storageFull,
                "the disk holding \(path) is full: the database file must grow by \((pages - l.file) >> 10) KiB at"
                    + " the next checkpoint and the disk has \(l.free >> 10) KiB free")
        }
    }

    /// Writes the WAL back and truncates it, waiting for no reader: nil if it did, else why
    /// not. With the pool's busy timeout, a reader's snapshot (a backup, a long query) held
    /// the writer, and so every client's writes, for 10 s each time.
    func writeBack() -> String? {
        do {
            let row = try checkpointing("checkpoint") { db -> Row? in
                try Checkpointer.waitingForNoOne(db.sqliteConnection, after: Store.busyTimeoutMilliseconds) {
                    try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                }
            }
            guard let row, row[0] as Int? != 0 else { return nil }
            return "a reader holds the WAL: a backup or a long query; it is written back once the reader is done"
        } catch {
            let sql = "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size"
            let pages = (try? read { r in try Int64.fetchOne(r.db, sql: sql) }).flatMap { $0 }
            let growth = pages.map { $0 - Store.fileSize(path) } ?? 0
            guard growth > 0 else { return "\(error)" }
            return "the WAL holds \(growth >> 10) KiB of growth of the database file, and the disk has no room for it"
        }
    }

    /// Opens the pool. GRDB writes a transaction into a missing or empty WAL (as a clean
    /// stop leaves it), so on a full disk the open itself fails: it may use the reserve, since
    /// a daemon that cannot start cannot free space either.
    /// GRDB looks for the WAL at the name it is given + "-wal", so behind the URI that names
    /// the coalescing VFS it never finds one and always writes that transaction. So a WAL the
    /// last run left is written back first, and that transaction follows none of its frames.
    /// When it cannot be (a full disk), the pool opens by the plain path, where GRDB sees the
    /// WAL and writes nothing, with SQLite's own WAL writes until a restart (said in
    /// `coalescing`), rather than take the reserve deletes need for a write-back (the open
    /// takes it later only if a write it cannot skip needs it: a schema upgrade, the drain,
    /// the lease numbers).
    static func openPool(
        path: String, coalescing: inout WALCoalescing, walLeft: Bool, configuration: Configuration, reserve: Reserve
    ) throws -> DatabasePool {
        if coalescing.active && walLeft, let why = writeBackLeftoverWAL(path) {
            coalescing = .off(why + " (until a restart)", fellBack: true)
        }
        do {
            return try DatabasePool(path: coalescing.poolPath(path), configuration: configuration)
        } catch let e as DatabaseError where e.resultCode == .SQLITE_FULL && !configuration.readonly {
            guard reserve.release() else { throw e }
            reserve.note(
                .warning,
                "the disk holding \(path) is full: released the reserve \(reserve.path) so that the database can open")
            return try DatabasePool(path: coalescing.poolPath(path), configuration: configuration)
        }
    }

    /// Whether this thread runs a write that frees space (a delete, a policy run, a sweep).
    static var insideFreeingWrite: Bool {
        get { Thread.current.threadDictionary[freeingKey] != nil }
        set { Thread.current.threadDictionary[freeingKey] = newValue ? true : nil }
    }
    private static let freeingKey = "assetd.freeingWrite"

    static func isStorageFull(_ error: any Error) -> Bool {
        (error as? StoreError)?.code == .storageFull
    }

    /// Looks at the database's filesystem (the daemon calls it every second, off its loop):
    /// tells the checkpointer whether space is low, writing the WAL back and truncating it
    /// when it is; allocates the reserve again once there is room, counting the database's
    /// free pages (assetd(8), FULL DISK).
    public func maintainSpace() {
        guard !configuration.readOnly, syncFailure == nil, !state.withLock({ $0.closed }) else { return }
        guard var space = reserve.space else { return }
        let low = space.free < Checkpointer.lowSpaceBytes
        checkpointer.lowSpace.store(low, ordering: .relaxed)
        if reserve.noteLowSpace(low) {
            reserve.note(
                low ? .warning : .info,
                low
                    ? "free space on the disk holding \(path) is low (\(space.free >> 20) MiB): the WAL is checkpointed"
                        + " and truncated early"
                    : "free space on the disk holding \(path) is back (\(space.free >> 20) MiB)")
        }
        // The WAL keeps its size after a checkpoint: truncated here, off the writer's commits,
        // and first, so that its blocks count below (any WAL at all once the reserve went to a
        // delete: its blocks may be what the reserve needs to come back). Not through the
        // reserve: on a full disk it waits for a delete and its sweep.
        let wal = Store.fileSize(path + "-wal")
        // It waits for no reader: else a backup's snapshot held every write 10 s of every 11.
        if low, wal > Int64(Checkpointer.lowSpaceThreshold) * 4096 || (wal > 0 && reserve.wasReleased) {
            _ = writeBack()
            space = reserve.space ?? space
        }
        // Pages deletes freed inside the file: puts reuse them without growing it.
        let freePages = reserve.wasReleased || low ? freePageBytes() : 0
        // Room again: twice the reserve (at least 2 MiB) on the disk and in those pages,
        // counted before the reserve takes its share, and the reserve back for the deletes of
        // the next full disk.
        let size = reserve.size(total: space.total)
        let room = space.free + freePages >= 2 * max(size, 1 << 20)
        let disk = space.free >= 2 * max(size, 1 << 20)
        if reserve.restore(freePages: freePages) {
            reserve.note(.info, "allocated the reserve \(reserve.path) (deletes use it when the disk is full)")
        }
        if room, size == 0 || disk || reserve.isPresent, reserve.noteFull(false) {
            reserve.note(
                .info,
                "there is room again on the disk holding \(path) (\(space.free >> 20) MiB free, and \(freePages >> 20)"
                    + " MiB of free pages in the database)")
        }
    }

    /// Bytes of the database's free pages (freelist_count × page_size) as of the last commit:
    /// room for writes that do not grow the file. 0 if they cannot be read.
    func freePageBytes() -> Int64 {
        (try? read { r in
            try Int64.fetchOne(
                r.db, sql: "SELECT freelist_count * page_size FROM pragma_freelist_count, pragma_page_size")
        }).flatMap { $0 } ?? 0
    }

    /// What happened to the disk since the last call, for the daemon's log.
    public func takeSpaceNotices() -> [SpaceNotice] { reserve.takeNotices() }
}
