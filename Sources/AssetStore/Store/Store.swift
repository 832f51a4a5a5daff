// The store: one SQLite database (WAL) with one writer at a time and concurrent snapshot
// readers. It owns the lock next to the database, applies configured templates and indexes
// at open, drains the unlink queue, and hands out read and write transactions.

import CSideFiles
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// An open assetd database.
public final class Store: Sendable {
    /// The database file.
    public let path: String
    /// The settings it was opened with.
    public let configuration: StoreConfiguration
    /// Managed roots, normalised.
    public let roots: ManagedRoots
    /// True when opened without the lock (writes refused).
    public var isReadOnly: Bool { configuration.readOnly }
    /// Live leases.
    public let leases: LeaseRegistry
    /// The wall clock and its steps seen (ClockSteps.swift).
    public let clocks: ClockSteps
    /// Whether the writer's WAL writes are combined, and why not.
    public let walCoalescing: WALCoalescing

    let pool: DatabasePool
    let queries: QueryConnectionPool
    /// Bumped after every commit of the writer: ``PointReader``s reopen older snapshots.
    let commits: CommitCounter
    /// Runs checkpoints beside the writer instead of inside its commits.
    let checkpointer: Checkpointer
    /// The ballast that lets deletes commit on a full disk (Store+Reserve.swift).
    let reserve: Reserve
    /// Bumped, on the writer, by any write that makes a queued unlink due sooner than it was
    /// or fills in its file's device or identity: a `min_free` step's count so far may miss
    /// such a row, and counts the whole queue again when this moved (MinFreeQueue.swift).
    let queueRowsMoved = Atomic<Int>(0)
    /// The wall clock's steps back whose effect on the queue is bounded (Store+ClockSteps.swift).
    let stepsBackBounded = Atomic<Int>(0)
    /// Write transactions the bounds of steps back have taken (for tests).
    let boundTransactions = Atomic<Int>(0)
    /// Reads of the queue a policy run's unlinks beside its batches made (SweepAlongside; tests).
    let alongsideReads = Atomic<Int>(0)
    /// WAL syncs `syncWAL` has made (for tests).
    let walSyncs = Atomic<Int>(0)
    /// The WAL's descriptor for `syncWAL`, kept open; held while a sync runs (Store+WALSync.swift).
    let walSync = Mutex(WALSyncState())
    /// Tests: an errno the next fdatasync of the WAL fails with (0: none).
    let injectedSyncError = Atomic<Int32>(0)
    /// Touches recorded and not yet written (Store+Access.swift).
    let accesses = Mutex(PendingAccesses())
    /// Held while a flush of access times writes: one at a time.
    let accessFlush = Mutex(())
    // Released (file closed) when the store is deallocated or closed.
    private let lock: Mutex<StoreLock?>
    /// The roots' markers held locked (Store+RootBinding.swift); released as the lock is.
    let rootLocks = Mutex<RootLocks?>(nil)
    /// The device of the database's folder (Store+Files.swift, `ownFileIDs`).
    let ownDevice: Int64?
    let state: Mutex<State>

    struct State {
        /// By the collection's bytes, as the `template` table keys them.
        var templates: [UTF8Key: [EdgeTemplate]] = [:]
        var indexes: [String: IndexDefinition] = [:]
        /// The highest commit known to be on disk.
        var durableCommit: Int64 = 0
        var closed = false
        var policy: PolicyConfiguration?
        /// `control.enforce_ownership` (WriteTransaction+Owners.swift).
        var enforceOwnership = false
        /// Changes of `policy.order` so far, and how many of them a committed policy run has
        /// made the store's eviction state forget (EvictionQueues.swift): a change and back
        /// still starts the state afresh.
        var orderChanges = 0
        var orderChangesForgotten = 0
        /// Earlier device numbers of the roots' filesystems, to their numbers now, as the last
        /// sweep (or the open) read them (DeviceRenumbering.swift).
        var renumbered = RenumberedDevices()
        /// Caps on a `min_free` out of reach, by device, and the changes not yet logged (MinFreeCap.swift).
        var minFreeCaps: [String: MinFreeCap] = [:]
        var minFreeCapChanges: [MinFreeCapChange] = []
        /// Real policy runs walking one owner's LRU order now (Store+OwnerLRU.swift).
        var ownerLRUWalkers = 0
        /// What the open could not do and the caller should say (Store+WALSync.swift).
        var openWarnings: [String] = []
        /// Tests: what statvfs reads of the roots' filesystems, in root order (a renumbering,
        /// two roots under one filesystem id).
        var rootFilesystems: (@Sendable () -> [(device: Int64, fsid: Int64)])?
        /// The mark of a backup copy, nil for a live database (Store+CopyMark.swift).
        var copyMark: String?
        /// What a restore holds until an admin says otherwise (Store+Restore.swift).
        var restoreHold: RestoreHold?
        /// Tests: runs in `syncWAL` once its fdatasync has returned, before a failure is recorded.
        var walSynced: (@Sendable () -> Void)?
        /// Tests: runs in each real policy batch after its decisions, before its commit.
        var policyBatchDecided: (@Sendable () -> Void)?
        /// Tests: runs in a policy batch's transaction once the files earlier batches queued
        /// were unlinked beside it and recorded, with their paths, before its commit; throwing
        /// rolls the batch back as a crash would.
        var sweptAlongside: (@Sendable ([String]) throws -> Void)?
        /// Tests: runs in `verify --delete-orphans` with each orphan's path after its checks,
        /// just before its unlink.
        var orphanUnlinkDecided: (@Sendable (String) -> Void)?
        /// Tests: runs when an index query is about to wait for an access flush under way.
        var queryWaitsForFlush: (@Sendable () -> Void)?
        /// Whether a real policy run since the open looked for stale shared-file entries.
        var sharedListChecked = false
        /// Policy runs under way, each with the writer's map on (`withMappedWriter`); changed
        /// only on the writer's queue.
        var mappedRuns = 0
        /// The writer's `cache_size` before the first of the runs under way raised it.
        var writerCacheBeforeRuns: Int?
    }

    /// Opens (creating it and its folder if needed) the database at `path`. Takes the lock
    /// unless `readOnly`, rebuilds changed indexes (reporting `progress`) and drains due unlinks.
    public convenience init(
        path: String, configuration: StoreConfiguration,
        progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil
    ) throws {
        try self.init(opening: path, configuration: configuration, progress: progress)
    }

    private init(
        opening path: String, configuration: StoreConfiguration,
        progress: (@Sendable (IndexRebuildProgress) -> Void)?
    ) throws {
        var configuration = configuration
        if configuration.mustExist, let why = Store.notADatabase(path) {
            throw StoreError(.conflict, why, detail: ["not_a_database": true])
        }
        self.path = path
        self.roots = try ManagedRoots(configuration.roots)
        roots.pins.pinAll(roots.paths)
        clocks = ClockSteps(wall: configuration.clock, steady: configuration.steadyClock)
        leases = LeaseRegistry(roots: roots, clocks: clocks)
        let folder = (path as NSString).deletingLastPathComponent
        if !configuration.readOnly {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw StoreError(.permissionDenied, "cannot create \(folder): \(error.localizedDescription)")
            }
        }
        // By the resolved name: a symlink to a held database must meet its holder's lock.
        if let why = Store.foreignSymlink(path) { throw StoreError(.conflict, why, detail: ["symlink": true]) }
        let realName = Store.realName(path)
        if let why = Store.otherNames(realName) { throw StoreError(.conflict, why, detail: ["hard_links": true]) }
        let owner = StoreFileOwner.of(database: realName)
        // As root, SQLite gives the side files it opens to the database's owner: never unguarded.
        if geteuid() == 0 && assetd_side_files_guarded() == 0 {
            throw StoreError(
                .internalError, "cannot open \(path) as root: SQLite refused the guard on its -wal, -shm and -journal")
        }
        // `assetctl --db` reads a marked backup read-only: no look at it turns its header to WAL
        // mode or upgrades its schema (Store+Restore.swift). Read with the guard on.
        if configuration.opensCopies && !configuration.writesCopies && !configuration.readOnly,
            Store.peekCopyMark(path) != nil
        {
            configuration.readOnly = true
            configuration.reserve = 0
        }
        self.configuration = configuration
        lock = Mutex(
            configuration.readOnly
                ? nil : try StoreLock(path: realName + ".lock", owner: owner, holder: configuration.lockHolder))
        ownDevice = Store.folderDevice(of: realName)

        var config = Configuration()
        config.readonly = configuration.readOnly
        config.busyMode = .timeout(Double(Store.busyTimeoutMilliseconds) / 1000)
        Store.boundPageCaches()
        if let why = Store.foreignWAL(path) { throw StoreError(.conflict, why, detail: ["foreign_wal": true]) }
        // Looked at before the pool opens: GRDB writes a transaction into a missing or empty WAL.
        let leftoverWAL = !configuration.readOnly && Store.fileSize(path + "-wal") > 0
        // Read through before anything writes it back: another database's log is refused
        // while the file is still as it was (docs/DESIGN.md, The unlink pipeline, item 7).
        if leftoverWAL, let why = Store.checkLeftoverWAL(path) {
            throw StoreError(.conflict, why, detail: ["foreign_wal": true])
        }
        // WAL frames written once per commit, not twice per frame (wal_coalesce.c), by the
        // connections that write: the pool's (GRDB opens its readers by the same name; they
        // never write the WAL, so the VFS only passes their reads on) and the checkpointer's.
        // Point readers, query connections and backups read with SQLite's default VFS, as
        // another program would: the VFS writes a commit's frames before SQLite publishes
        // it, and wraps the same files, locks and wal-index, so they see what the writer does.
        var coalescing = WALCoalescing.resolve(
            enabled: configuration.coalesceWAL, readOnly: configuration.readOnly,
            sqliteVersion: configuration.sqliteVersionForCoalescing ?? sqlite3_libversion_number())
        let counter = CommitCounter()
        commits = counter
        reserve = Reserve(database: realName, wanted: configuration.readOnly ? 0 : configuration.reserve, owner: owner)
        let checkpointer: Checkpointer
        do {
            pool = try Store.openPool(
                path: path, coalescing: &coalescing, walLeft: leftoverWAL, configuration: config, reserve: reserve)
            walCoalescing = coalescing
            checkpointer = Checkpointer(path: path, vfs: coalescing.vfs)
            self.checkpointer = checkpointer
            if !configuration.readOnly {
                // NORMAL: SQLite syncs the WAL only around checkpoints. With durability "full",
                // `write` syncs the WAL itself after each commit, outside the write lock, so the
                // next writer builds its transaction while this one waits for the disk (group
                // commit); a write returns, and is acknowledged, only once synced.
                try pool.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = NORMAL")
                    // Statement and savepoint journals in memory: spilled to a temp file, a batch
                    // of puts wrote every changed page a second time.
                    try db.execute(sql: "PRAGMA temp_store = MEMORY")
                    db.add(transactionObserver: CommitObserver(counter, checkpointer), extent: .databaseLifetime)
                    checkpointer.install(on: db.sqliteConnection!)  // open: we are inside its write
                }
            }
        } catch let e as DatabaseError {
            // SQLite could not open a file: if side_files.c refused a side file, say which,
            // rather than "unable to open database file" (a conflict, as other names of the
            // database are). Any other error is passed on as it is.
            if e.resultCode == .SQLITE_CANTOPEN, let why = Store.otherNames(realName) {
                throw StoreError(.conflict, why, detail: ["hard_links": true])  // linked since the look
            }
            if e.resultCode == .SQLITE_CANTOPEN, let refused = Store.refusedSideFile(realName) {
                let key = refused.linked ? "hard_links" : "not_a_regular_file"
                throw StoreError(.conflict, "cannot open \(path): \(refused.why)", detail: [key: true])
            }
            if let corrupt = Store.corruption(e) {
                throw StoreError(corrupt.code, "cannot open \(path): \(corrupt.message)", detail: corrupt.detail)
            }
            let code: StoreError.Code = e.resultCode == .SQLITE_FULL ? .storageFull : .permissionDenied
            throw StoreError(code, "cannot open \(path): \(e.message ?? "\(e.resultCode)")")
        }
        queries = QueryConnectionPool(
            path: path, timeLimit: configuration.queryTimeLimit, lengthLimit: configuration.queryLengthLimit,
            tempLimit: configuration.queryTempLimit)
        state = Mutex(State(policy: configuration.policy, enforceOwnership: configuration.enforceOwnership))
        if configuration.mustExist {
            let ours = try Store.mapErrors {
                try pool.read { db in
                    try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'meta')")
                }
            }
            if ours != true {
                throw StoreError(
                    .conflict, "\(path) is not an assetd database (no meta table): not opened",
                    detail: ["not_a_database": true])
            }
        }
        numberLeases()
        if coalescing.fellBack, let why = coalescing.reason {
            state.withLock { $0.openWarnings.append("WAL writes are not combined (store.coalesce_wal): \(why)") }
        }
        if let why = QueryConnection.unboundedMemory { state.withLock { $0.openWarnings.append(why) } }

        try checkSchemaKnown()
        if !configuration.readOnly {
            // Before anything else is written or synced (only the lease numbers, so that the
            // write-back takes them along); a WAL the last run left is written back
            // (Store+WALSync.swift; with the coalescing VFS, before the pool opened: openPool).
            try openWALDescriptor(settling: leftoverWAL) { try reserveLeaseNumbersAtOpen(early: true) }
            try migrate(progress: progress)
            try reserveLeaseNumbersAtOpen(early: false)
        }
        try readCopyMark()
        if !configuration.readOnly { try readRestoreHold() }
        try loadDefinitions()
        // Before the drain of due unlinks (finishOpen): nothing is unlinked in a root another
        // database holds.
        if configuration.bindRoots && !configuration.readOnly && !isCopy { try bindRoots() }
        if configuration.readOnly {
            try readRootDevices()
        } else {
            try finishOpen(progress: progress)
        }
    }

    /// Closes the database and releases the lock; the store is unusable afterwards. With
    /// `checkpoint` (unless the caller has just run one) the WAL is written back and emptied
    /// first, so the next open has nothing of this run's to write back.
    public func close(checkpoint emptying: Bool = true) {
        leases.numbers.stop()  // a reservation of lease numbers ahead must not write from here on
        // Pending access times are written first; a failure loses only them (assetd(8)).
        if !configuration.readOnly && !state.withLock({ $0.closed }) { _ = try? flushAccesses() }
        let wasClosed = state.withLock { s in
            defer { s.closed = true }
            return s.closed
        }
        guard !wasClosed else { return }
        // The WAL written back and emptied: the next open has nothing of this run's to settle
        // (Store+WALSync.swift). Refused after a failed sync, which the next open then settles.
        if emptying && !configuration.readOnly { _ = try? checkpoint() }
        queries.close()
        checkpointer.close()
        try? pool.close()
        walSync.withLock { $0.descriptor = nil }
        rootLocks.withLock { $0 = nil }
        lock.withLock { $0 = nil }
    }

    /// Runs `body` in a read-only transaction on a snapshot, concurrently with the writer.
    public func read<T>(_ body: (ReadTransaction) throws -> T) throws -> T {
        try checkOpen()
        return try Store.mapErrors {
            try pool.read { db in try body(ReadTransaction(db: db, roots: roots)) }
        }
    }

    /// Runs `body` in the write transaction (one at a time). At the end the rules are
    /// processed to a fixed point and the transaction commits as a whole, or not at all.
    /// `owner` is the owner of objects put without one (the client's user name). With
    /// durability "full" the commit is synced before `write` returns, unless `syncing` is
    /// false: then the caller must not acknowledge it before `syncCommitted` has covered it.
    /// `freesSpace`: the write frees space (deletes only), and may use the reserve on a full
    /// disk (Store+Reserve.swift).
    @discardableResult
    public func write<T>(
        owner: String? = nil, syncing: Bool = true, freesSpace: Bool = false, _ body: (WriteTransaction) throws -> T
    ) throws -> Committed<T> {
        try checkWritable()
        // Re-run whole on a full disk if it frees space: SQLite rolled the failed one back.
        let committed = try freeingSpace(freesSpace ? "a delete" : nil) {
            try Store.mapErrors {
                try pool.writeWithoutTransaction { db in
                    var result: Committed<T>?
                    var tx: WriteTransaction?
                    try Store.inWriterTransaction(db, commits) {
                        let snapshot = state.withLock { ($0.templates, $0.indexes) }
                        let t = try WriteTransaction(
                            db: db, store: self, templates: snapshot.0, indexes: snapshot.1,
                            defaultOwner: owner ?? configuration.defaultOwner)
                        tx = t
                        let value = try body(t)
                        let report = try t.finish()
                        if !freesSpace { try checkGrowthRoom(db) }
                        result = Committed(value: value, report: report)
                    }
                    // Committed: publish definition changes before the next writer starts.
                    let t = tx!  // set before commit
                    state.withLock { s in
                        s.templates = t.templates
                        s.indexes = t.indexes
                    }
                    return result!  // set before commit
                }
            }
        }
        if syncing { try syncCommitted(committed.report.commit) }
        return committed
    }

    func checkOpen() throws(StoreError) {
        if state.withLock({ $0.closed }) { throw StoreError(.internalError, "the store is closed") }
    }

    /// Before any write: the store is open, no sync has failed, and it is not read-only.
    func checkWritable() throws(StoreError) {
        try checkOpen()
        try checkNoSyncFailure()
        try checkNotReadOnly()
    }

    /// `busy` on a read-only store: SQLite's own error would read as an I/O error.
    func checkNotReadOnly() throws(StoreError) {
        if configuration.readOnly, let mark = copyMark {
            throw StoreError(
                .conflict,
                "\(path) is a backup copy (\(mark)), opened read-only: to restore it, with assetd stopped, put it"
                    + " in place and run `assetctl --db PATH --config CONFIG restore` (CONFIG: the daemon's)")
        }
        guard !configuration.readOnly else {
            throw StoreError(.busy, "the store is open read-only: another process holds the database")
        }
    }

    /// Translates SQLite failures into stable error codes (disk full, busy); everything else
    /// is internal, and its SQL never reaches a message.
    static func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as DatabaseError {
            switch e.resultCode {
            case .SQLITE_FULL: throw StoreError(.storageFull, "the disk holding the database is full")
            case .SQLITE_BUSY, .SQLITE_LOCKED: throw StoreError(.busy, "the database is busy")
            case .SQLITE_READONLY: throw StoreError(.permissionDenied, "the database is read-only")
            case .SQLITE_IOERR: throw StoreError(.internalError, "I/O error on the database")
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: throw corruption(e)!
            default: throw StoreError(.internalError, "database error \(e.resultCode.rawValue)")
            }
        }
    }

    /// The error for a database SQLite finds damaged, or not a database at all: nothing the
    /// daemon's restarts mend (assetd exits 78 on it), so it says what the admin can do.
    static func corruption(_ e: DatabaseError) -> StoreError? {
        guard e.resultCode == .SQLITE_CORRUPT || e.resultCode == .SQLITE_NOTADB else { return nil }
        let what = e.resultCode == .SQLITE_NOTADB ? "is not a database" : "is damaged"
        return StoreError(
            .internalError,
            "the database \(what) (\(e.message ?? "\(e.resultCode)")): restore a backup (`restore` in assetctl(1))",
            detail: ["corrupt": true])
    }

    // MARK: definitions

    private func loadDefinitions() throws {
        let (templates, indexes) = try read { r in try (r.storedTemplates(), r.storedIndexes()) }
        state.withLock { s in
            s.templates = templates
            s.indexes = Dictionary(uniqueKeysWithValues: indexes.map { ($0.name, $0) })
        }
    }

    func applyConfiguredDefinitions(progress: (@Sendable (IndexRebuildProgress) -> Void)?) throws {
        let current = state.withLock { ($0.templates, $0.indexes) }
        let changedTemplates = configuration.templates.filter { current.0[$0.key] ?? [] != $0.value }
        let changedIndexes = configuration.indexes.filter { current.1[$0.name] != $0 }
        guard !changedTemplates.isEmpty || !changedIndexes.isEmpty else { return }
        try write { tx in
            for def in changedIndexes { try tx.defineIndex(def, progress: progress) }
            for (collection, edges) in changedTemplates.sorted(by: {
                Array($0.key.string.utf8).lexicographicallyPrecedes($1.key.string.utf8)
            }) {
                try tx.setTemplate(collection: collection.string, edges: edges)
            }
        }
    }

    // MARK: durability

    /// Syncs the WAL so every commit made so far survives power loss, and records it. Only
    /// the WAL: a checkpoint syncs the database file itself before the WAL can restart, and
    /// closing a descriptor of the database file would drop this process's POSIX locks on it
    /// (SQLite's), letting another process take the daemon for gone and delete the WAL.
    func makeDurable() throws {
        try checkNoSyncFailure()  // the sweep and its unlinks stop too
        try makeDurable(upTo: try read { r in try r.lastCommit() })
    }

    /// `makeDurable` for a caller holding the writer (`db`): every commit has ended, so one
    /// fdatasync covers them all, and none can come between it and the caller's work.
    func makeDurable(writer db: Database) throws {
        try checkNoSyncFailure()
        try makeDurable(upTo: try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'commit'") ?? 0)
    }

    private func makeDurable(upTo commit: Int64) throws {
        if state.withLock({ $0.durableCommit >= commit }) { return }
        // Always an fdatasync: a reader sees a commit before its writer has counted it, so
        // the commit count cannot tell whether an earlier sync covered this one. The WAL is
        // there as long as the store is open; if it is not, syncWAL stops writes.
        try syncWAL(force: true)
        state.withLock { $0.durableCommit = max($0.durableCommit, commit) }
    }

    /// With durability "full": syncs the WAL, so `commit` and every commit before it survive
    /// power loss, and records it. Called after the write lock is released; a checkpoint that
    /// restarts the WAL meanwhile has already synced those frames and the database file.
    /// A failure is a StoreError marked `unsynced`.
    public func syncCommitted(_ commit: Int64) throws(StoreError) {
        guard configuration.durability == .full else { return }
        try syncWAL()
        state.withLock { $0.durableCommit = max($0.durableCommit, commit) }
    }

    /// Page cache per connection, in KiB (SQLite's `cache_size` when negative): the point
    /// reader's serves random gets; a query connection's, an index's hot pages.
    static let pointReaderCacheKiB = 16 << 10
    static let queryCacheKiB = 8 << 10
    /// All connections' page caches together stay under this (SQLite recycles pages past it).
    static let heapLimit: Int64 = 64 << 20

    /// Readers never map the database (`mmap_size` stays 0), the writer only during a policy
    /// run (`withMappedWriter`): a map makes every page a scan touches count in the daemon's
    /// RSS (two full scans at 1,000,000 objects put it at 500 MiB), and point reads measured
    /// faster from a page cache than from the map. Pages are copied into per-connection
    /// caches instead, which SQLite's soft heap limit bounds as a whole.
    static func boundPageCaches() {
        if sqlite3_soft_heap_limit64(-1) == 0 { sqlite3_soft_heap_limit64(heapLimit) }
    }

    /// Bytes of the database the writer maps while a policy run is under way.
    static let policyMapSize = 1 << 30

    /// The writer's page cache in KiB during a policy run. A batch of 1,000 deletions dirties
    /// about a page an object (the size indexes' entries lie in random pages); in SQLite's
    /// default 2 MiB the batch spilled dirty pages to the WAL and read them back from it
    /// (pread: the map covers only the database file), about three reads an object. The
    /// larger cache keeps the batch's pages; it shrinks back when the run ends.
    static let policyWriterCacheKiB = 16 << 10

    /// SQLite's own default page cache (`cache_size = -2000`, 2000 KiB), for a writer whose size
    /// before a run could not be read.
    static let defaultCacheSize = -2000

    /// Runs `body` (a policy run) with the writer reading the database through a map, which
    /// is how a run over a cold cache reads fast (the kernel reads around each faulting page:
    /// 1,000,000-file expiry took 6.5 s through pread, 5.0 s mapped), and with a larger page
    /// cache. The map goes when the last run ends, and with it the pages it made resident; the
    /// cache returns to its size.
    func withMappedWriter<T>(_ body: () throws -> T) rethrows -> T {
        mapWriter(true)
        defer { mapWriter(false) }
        return try body()
    }

    /// The writer's `mmap_size` now (tests).
    func writerMapSize() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA mmap_size") ?? -1 }
    }

    /// The writer's page cache now, in KiB (tests).
    func writerCacheSize() throws -> Int {
        try pool.writeWithoutTransaction { db in -(try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0) }
    }

    /// Best effort: a map that could not be set only makes the run read through pread.
    /// Counted and set on the writer's queue, so that overlapping runs apply them in order.
    private func mapWriter(_ on: Bool) {
        pool.writeWithoutTransaction { db in
            let size: Int? = state.withLock { s in
                s.mappedRuns += on ? 1 : -1
                if on && s.mappedRuns == 1 { return Store.policyMapSize }
                return !on && s.mappedRuns == 0 ? 0 : nil
            }
            guard let size else { return }
            // Each on its own: a map that failed must not leave the cache raised.
            if size > 0 {
                let before = try? Int.fetchOne(db, sql: "PRAGMA cache_size")
                state.withLock { $0.writerCacheBeforeRuns = before }
            }
            try? db.execute(sql: "PRAGMA mmap_size = \(size)")
            let cache =
                size > 0
                ? -Store.policyWriterCacheKiB : state.withLock { $0.writerCacheBeforeRuns } ?? Store.defaultCacheSize
            try? db.execute(sql: "PRAGMA cache_size = \(cache)")
            if size == 0 {
                // The pages past the old size go back to the allocator, and from it to the kernel.
                try? db.execute(sql: "PRAGMA shrink_memory")
                _ = mallocTrim(0)
            }
        }
    }

    /// The highest commit known to be durable.
    public var durableCommit: Int64 { state.withLock { $0.durableCommit } }

    /// What the open could not do, for the caller to log (a WAL it could not write back).
    public var openWarnings: [String] { state.withLock { $0.openWarnings } }

    /// Why a sync of the WAL (or a checkpoint's sync of the database) failed, if one has:
    /// from then on writes are refused.
    public var syncFailure: String? { checkpointer.syncFailureMessage }

    /// Refuses a write or checkpoint once a sync has failed. Not marked unsynced: nothing was
    /// committed, and the caller may answer so.
    func checkNoSyncFailure() throws(StoreError) {
        guard let failure = syncFailure else { return }
        throw Store.writesRefused(failure)
    }

    static func writesRefused(_ failure: String) -> StoreError {
        StoreError(
            .internalError,
            "writes are refused: a sync of the database failed (\(failure)), so what was"
                + " written since may not be on disk; restart assetd to recover from what is")
    }

    /// The lifecycle policies in force (the daemon replaces them on SIGHUP).
    public var policy: PolicyConfiguration? {
        get { state.withLock { $0.policy } }
        set {
            state.withLock {
                if ($0.policy?.order ?? .lru) != (newValue?.order ?? .lru) { $0.orderChanges += 1 }
                if $0.policy?.minFree != newValue?.minFree { $0.dropMinFreeCaps() }
                $0.policy = newValue
            }
        }
    }
}

/// What a write transaction returned, and what its commit did.
public struct Committed<T> {
    /// The body's result.
    public var value: T
    /// What the commit did.
    public var report: CommitReport
}

extension Committed: Sendable where T: Sendable {}

/// Counts the writer's commits, whatever they changed.
private final class CommitObserver: TransactionObserver {
    let counter: CommitCounter
    let checkpointer: Checkpointer
    init(_ counter: CommitCounter, _ checkpointer: Checkpointer) {
        self.counter = counter
        self.checkpointer = checkpointer
    }
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }
    func databaseDidChange(with event: DatabaseEvent) {}
    /// The last word on every write, whichever way it came (a method's checks run earlier,
    /// and a sync may fail on another thread after them): none commits after a failed sync.
    func databaseWillCommit() throws {
        if counter.inBody.load(ordering: .relaxed) {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "Transaction was aborted")
        }
        if let failure = checkpointer.syncFailureMessage { throw Store.writesRefused(failure) }
    }
    func databaseDidCommit(_ db: Database) { counter.value.add(1, ordering: .releasing) }
    func databaseDidRollback(_ db: Database) {}
}
