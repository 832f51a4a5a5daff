// How a store is opened: managed roots, durability, unlink delay, templates and indexes
// from the config file, the clock (injectable so tests control time) and access mode.

import Foundation

/// Settings for opening a `Store`.
public struct StoreConfiguration: Sendable {
    /// When a write is durable.
    public enum Durability: String, Sendable, CaseIterable {
        /// Each commit is synced before it returns.
        case full
        /// Commits are synced soon after; unlinks still wait for the sync.
        case normal
    }

    /// Managed roots: every file path must lie below one.
    public var roots: [String]
    /// Commit durability.
    public var durability: Durability = .full
    /// Seconds between a commit and the unlinks it queued.
    public var unlinkDelay: Double = 0
    /// User indexes from the configuration; a changed one is rebuilt at open.
    public var indexes: [IndexDefinition] = []
    /// Collection templates from the configuration, applied at open.
    public var templates: [UTF8Key: [EdgeTemplate]] = [:]
    /// The owner of objects put without one (the process's user name by default).
    public var defaultOwner: String = StoreConfiguration.processUserName()
    /// Unix seconds now, the wall clock: what stamps rows and TTLs go by. Tests substitute
    /// their own, which is then the steady clock too (a test's clock never steps) unless
    /// `steadyClock` is set after it.
    public var clock: @Sendable () -> Double = { Date().timeIntervalSince1970 } {
        didSet { steadyClock = clock }
    }
    /// Seconds on a clock that never steps (CLOCK_BOOTTIME): lease deadlines, and the ages
    /// that protect (files.unlink_delay, backoff, policy min_age, files.orphan_grace) are
    /// held against a step of the wall clock by it (ClockSteps.swift).
    public var steadyClock: @Sendable () -> Double = ClockSteps.bootClock
    /// Run due unlinks while opening (assetd(8), DATA MODEL, The unlink queue); lease
    /// deferrals end and parked rows come back at every open of a live database anyway. Off
    /// for `assetctl --db`, which reads a database (a copy, maybe, opened with the live roots)
    /// without acting on its queue, and in tests of crash recovery.
    public var drainOnOpen = true
    /// Open a backup copy (Store+CopyMark.swift) too: `assetctl --db`, to read it or restore
    /// it. Otherwise (the daemon) a copy is refused.
    public var opensCopies = false
    /// With `opensCopies`: a marked copy in rollback mode (as `backup` writes it) opens
    /// writable, for the restore; otherwise read-only (Store+Restore.swift, `peekCopyMark`).
    public var writesCopies = false
    /// Never make a database: an empty file, or one without assetd's schema, is refused
    /// (`assetctl --db`; Store+Restore.swift, `notADatabase`).
    public var mustExist = false
    /// The database the config names (`store.path`) when the file opened is another one
    /// (`assetctl --db` on a cp, sqlite3 .backup or an older version's backup, none of them
    /// marked): treated as a copy for unlinking, as a marked one is. Nil: the configured one.
    public var configuredDatabase: String?
    /// Seconds an index query or aggregate may run before it is stopped (`query_rejected`).
    public var queryTimeLimit: Double = 30
    /// The longest text or blob a query may build (SQLITE_LIMIT_LENGTH on its connections).
    public var queryLengthLimit = 64 << 20
    /// The bytes of temporary files (sorts, groups and DISTINCT that outgrow memory) one query
    /// may hold at once; past it the query is stopped (`query_rejected`).
    public var queryTempLimit = 256 << 20
    /// Open without the lock, for reading a database another process holds.
    public var readOnly = false
    /// Bind each root to this database through its marker at a writable open of the live
    /// database (Store+RootBinding.swift): the daemon and `assetctl --db`; off for tests of the
    /// store alone.
    public var bindRoots = false
    /// Roots bound to this database even though their marker names another one, or they hold
    /// files this database, registering none, never saw (`assetd --adopt-root`).
    public var adoptRoots: [String] = []
    /// What the lock file names beside the pid (`assetd`, `assetctl`): an `assetctl --db`
    /// that finds the database held skips a maintenance run only for another `assetctl`
    /// (assetctl(1), Maintenance and cron). Nil: the pid alone.
    public var lockHolder: String?
    /// `store.reserve`: bytes of the ballast file kept next to the database so that deletes
    /// and evictions can still commit on a full disk (Store+Reserve.swift); 0: none.
    public var reserve: Int64 = StoreConfiguration.defaultReserve
    /// `store.coalesce_wal`: the writer gathers each commit's WAL frames into a few writes
    /// (WALCoalescing.swift), with the SQLite versions it was tested with; off: SQLite's own.
    public var coalesceWAL = true
    /// Tests: the SQLite version the coalescing decision is made for (nil: the library's).
    var sqliteVersionForCoalescing: Int32?
    /// Lifecycle policies (`[policy]`); nil: nothing is evicted or expired.
    public var policy: PolicyConfiguration?
    /// `control.enforce_ownership`: a rule of one owner's edge never deletes a file an object
    /// of another owner holds (WriteTransaction+Owners.swift).
    public var enforceOwnership = false
    /// `files.orphan_grace`: a file nothing registers is an orphan only once its mtime and
    /// ctime are both older than this many seconds.
    public var orphanGrace: Double = 3600
    /// `files.skip_open`: a queued file some process has open is kept and retried later.
    public var skipOpenFiles = false
    /// Policy batches whose objects only hold files by reference counting are deleted with a
    /// few set-based statements (`WriteTransaction.deleteReferenceCounted`); tests turn it off
    /// to compare with the rule worklist, which must give the same result.
    var setBasedPolicyDeletes = true
    /// Threads a policy run unlinks its earlier batches' files on, beside each batch
    /// (SweepAlongside.swift); benches compare settings.
    public var unlinkThreadsBeside = Store.sweepThreads

    /// `store.reserve` unless configured: room for thousands of delete commits.
    public static let defaultReserve: Int64 = 8 << 20

    /// Settings with these roots and defaults for the rest.
    public init(roots: [String]) {
        self.roots = roots
    }

    /// The owner name of `uid`, the effective user's by default, by the rule for the daemon's
    /// clients (OwnerName).
    public static func processUserName(uid: UInt32 = getuid()) -> String { OwnerName.of(uid: uid) }
}
