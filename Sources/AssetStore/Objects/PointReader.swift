// Point reads for one thread that keep one snapshot across many reads. Opening a read
// transaction costs two fcntl calls on the WAL index and a look at its header; the daemon's
// loop answers object.get back to back, so it keeps the snapshot until something commits
// (every commit bumps `Store.commits`) or until it ends the snapshot at the end of a loop
// turn (so an idle daemon never pins an old snapshot and the WAL can restart).

import GRDBSQLite
import Synchronization

/// Counts commits of the store's writer: a reader whose snapshot predates the count reopens it.
final class CommitCounter: Sendable {
    let value = Atomic<UInt64>(0)
    /// Set while a write transaction's body runs (`Store.inWriterTransaction`): a commit then
    /// is a statement run in autocommit after SQLite rolled the transaction back, and is refused.
    let inBody = Atomic<Bool>(false)
}

/// Object reads on one thread over a reused snapshot; never sees less than every commit that
/// finished before the read began.
public final class PointReader: PointReads {
    private let store: Store
    private let conn: QueryConnection
    /// The object's row statement (`Store.objectRowFilesSQL`), prepared once and kept: looking
    /// it up in the connection's cache, which resets it again, was about 450 instructions a get.
    private let objectRow: OpaquePointer
    /// Where this reader last found each object, and the statement that reads a row by id.
    private let byID: Store.RowByID
    /// The commit count read before the open snapshot was taken, or nil with none open.
    private var snapshotCommits: UInt64?

    /// A reader with its own connection.
    public convenience init(store: Store) throws {
        try self.init(store: store, idSlots: PointReader.idSlots)
    }

    /// How many refs a reader remembers the ids of: 4 MiB at most, touched as slots are used.
    static let idSlots = 1 << 16

    /// A reader remembering ids in `idSlots` slots (tests use few, to make refs share them).
    init(store: Store, idSlots: Int) throws {
        try store.checkOpen()
        self.store = store
        conn = try QueryConnection(path: store.path, timeLimit: store.configuration.queryTimeLimit)
        sqlite3_exec(conn.handle, "PRAGMA cache_size = -\(Store.pointReaderCacheKiB)", nil, nil, nil)
        objectRow = try conn.cached(Store.objectRowFilesSQL)
        byID = Store.RowByID(slots: ObjectIDSlots(count: idSlots), statement: try conn.cached(Store.objectRowByIDSQL))
    }

    deinit { endSnapshot() }

    /// The id this reader would read `ref` by, if it remembers one (for tests).
    func rememberedID(_ ref: ObjectRef) -> Int64? {
        var (collection, key) = (ref.collection, ref.key)
        return collection.withUTF8 { c in key.withUTF8 { k in byID.slots.id(c, k) } }
    }

    /// Appends the object's text exactly as the store's ``Store/objectJSON(_:touching:files:)`` prints it.
    public func appendObjectJSON(
        _ ref: ObjectRef, touching: Touching, files: FileReading, to out: inout [UInt8]
    ) throws -> Bool {
        if case .no = touching { try store.checkOpen() } else { try store.checkWritable() }
        return try inSnapshot(ref) {
            try store.renderObject(
                ref, on: conn, statement: objectRow, byID: byID, touching: touching, files: files, into: &out)
        }
    }

    public func touch(_ ref: ObjectRef, check: AccessCheck?) throws {
        try store.checkWritable()
        try inSnapshot(ref) { try store.touch(ref, on: conn, check: check) }
    }

    /// Runs `body` over a snapshot that has every commit finished before this call.
    private func inSnapshot<T>(_ ref: ObjectRef, _ body: () throws -> T) throws -> T {
        try ref.validate()
        // Read before the snapshot is taken (at the first step below): a commit counted after
        // this load is at worst seen, never missed.
        let commits = store.commits.value.load(ordering: .acquiring)
        if snapshotCommits != commits {
            endSnapshot()
            let begin = try conn.cached("BEGIN")
            guard sqlite3_step(begin) == SQLITE_DONE else { throw conn.failure(sqlite3_errcode(conn.handle)) }
            snapshotCommits = commits
        }
        do {
            return try body()
        } catch {
            endSnapshot()
            throw error
        }
    }

    /// Ends the open snapshot, if any (cheap when none is open).
    public func endSnapshot() {
        guard snapshotCommits != nil else { return }
        snapshotCommits = nil
        if let commit = try? conn.cached("COMMIT"), sqlite3_step(commit) == SQLITE_DONE {
            sqlite3_reset(commit)
        } else {
            sqlite3_exec(conn.handle, "ROLLBACK", nil, nil, nil)
        }
    }
}

/// Bound to the thread that uses it.
@available(*, unavailable)
extension PointReader: Sendable {}
