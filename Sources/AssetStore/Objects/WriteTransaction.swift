// The write transaction: the intent it records and its API for objects. Calls only record
// intent (deletes wait for commit, derived edges are derived at flush), so the rules see the
// state at commit: a key deleted and put again is an update. Edges, templates, index
// definitions and the file registry are WriteTransaction+Edges/+Templates/+Indexes/+Files.

import GRDB
import GRDBSQLite

/// The one write transaction at a time. Everything it does commits together, or nothing.
public final class WriteTransaction {
    let db: Database
    let store: Store
    /// This transaction's commit number.
    public let commit: Int64
    /// Unix seconds at the start of the transaction.
    public let now: Double
    let defaultOwner: String
    /// Each collection's templates, by the collection's bytes: under String's equality a
    /// collection's templates would apply to another whose name is canonically equivalent.
    var templates: [UTF8Key: [EdgeTemplate]]
    var indexes: [String: IndexDefinition]

    // Recorded by calls, consumed by flush.
    /// Objects to delete, in request order, with why; `ref` when a request named the object
    /// (its row then needs no second read, "deleteObject").
    var pendingDeletes: [(id: Int64, cause: DeleteCause, ref: ObjectRef?)] = []
    var pendingDeleteIDs: Set<Int64> = []
    /// Objects put since the last flush, with the derived edges their value declares.
    var dirty: [Int64: [DesiredEdge]] = [:]
    var dirtyOrder: [Int64] = []
    /// Objects inserted by this transaction, until the index refresh writes their rows (one
    /// not derived yet keeps an entry saying so): one entry an object, one hash a put. Set or
    /// cleared at every insert (a rolled-back savepoint can give an id out again).
    var inserted: [Int64: InsertedObject] = [:]
    /// Objects of `inserted` with figures (`held`) derived in this flush, for the first time,
    /// from the value their figures came from: their rows hold the truth unless a file of
    /// theirs changes size (registerFile drops its holders) or goes (a flush with rule work
    /// drops them all).
    var derivedSized: Set<Int64> = []
    /// Sources given a manual file edge by this transaction: their figures are the refresh's.
    var manuallyFiled: Set<Int64> = []
    /// Objects given a file edge by this transaction (index refresh looks up the files of
    /// these and of objects it did not create). Not restored when a savepoint rolls back, for
    /// simplicity: a superset only costs a query.
    var fileEdgeSources: Set<Int64> = []
    /// Judges each file a put's value or an added edge names, as the probe finds it: the
    /// caller's check (enforce_ownership's, AccessChecks.swift), set for one caller's call at
    /// a time.
    public var fileReferenceCheck: FileReferenceCheck?
    /// The most objects the rules may delete in this transaction (the objects a request named
    /// not counted), or nil for no bound; past it, or past `edgesPerCascadedObject` times it
    /// in edges its deletions remove, the flush throws `cascade_limit`, so the whole
    /// transaction rolls back. Set with `limitCascade(to:)`.
    public internal(set) var cascadeLimit: Int?
    /// Objects the rules decided to delete so far, counted against `cascadeLimit` (only with
    /// one): each is counted once, when the rule decides, before its deletion is queued.
    var cascaded = 0
    var cascadeCounted: Set<Int64> = []
    /// The objects the requests of the running flush named: not counted.
    var requestedDeletes: Set<Int64> = []
    /// Edges the deletions removed so far (the named objects' too), counted against the bound.
    var edgesCounted = 0
    /// What a bounded request's reads may still spend (WriteTransaction+ReadBound.swift); nil
    /// until its first read.
    var readAllowance: ReadAllowance?
    /// The bound of the request now running in a transaction that serves several (set by
    /// `beginRequest(bound:)`): its held files are charged to it, not to `cascadeLimit`, the
    /// smallest of the batch's bounds. Nil (the outer): one request, `cascadeLimit`.
    var requestBound: Int??
    /// Objects whose held files this transaction read again, by check (refreshHeldFiles).
    var heldRechecked: Set<HeldRecheck> = []
    /// The error of a flush that failed: the transaction can only roll back.
    var flushFailure: (any Error)?
    /// Manual edges whose source or destination object does not exist yet.
    var unresolved = PendingEdges()
    /// Edges removed with a reason, whose rules fire at flush.
    var removedWithReason: [(EdgeRow, EdgeRemovalReason)] = []

    // Flush working state.
    var work: [Work] = []
    /// A policy's bound on the rule work of one flush (`WriteTransaction+Evict.swift`): past
    /// it, the flush stops with `RuleWorkLimitReached`. `ruleWorkDone` counts the items done.
    var ruleWorkLimit: Int?
    var ruleWorkDone = 0
    var indexDirty: Set<Int64> = []
    /// Objects only touched: their index rows are written again (a user index may hold
    /// `accessed`), but their files are not summed again, which a touch cannot change (an
    /// object holding 100,000 files cost a scan of them at every flush after a touch).
    var accessDirty: Set<Int64> = []
    var filesTouched: Set<Int64> = []
    var deletedFiles: Set<Int64> = []
    /// The identities of file rows deleted or given another identity, for `dropLeftShared`.
    var sharedLeft: [(inode: Int64, device: Int64)] = []
    /// With enforce_ownership: the owners of objects deleted by this transaction, for the rules
    /// their edges fire once their rows are gone (WriteTransaction+Owners.swift).
    var ruleOwners: [Int64: String] = [:]
    /// `control.enforce_ownership` as this transaction began.
    lazy var ownersApart = store.enforceOwnership

    // Whole-transaction state, checked at commit.
    var deletedIDs: Set<Int64> = []
    var denyChecks: [(edge: EdgeRow, otherEnd: Int64, protected: String)] = []
    var notifyCandidates: [(edge: EdgeRow, node: Int64, reason: EdgeRemovalReason)] = []
    /// Candidates before this index have had their Nullify applied.
    var nullifyCursor = 0
    var report = CommitReport()
    private var cachedPutStatements: (lookup: Statement, insert: Statement)?
    var cachedFileStatements: FileStatements?
    /// The store's own files, looked at once a transaction, when a file on their device is
    /// registered (WriteTransaction+Files.swift, `refuseStoreFile`).
    var ownFiles: Set<FileID>?
    var cachedEdgeUpsert: Statement?
    private var cachedDeletionStatements: DeletionStatements?
    /// Each object deleted by a policy or a cascade, with its owner and protection, for the
    /// policy planner (which reads only those of its own evictions). Not a request's delete:
    /// it carries its names, and its row is not read again.
    var deletedDetails: [DeletedDetail] = []
    /// Each queued file's size and device, for the policy planner.
    var queuedDetails: [QueuedDetail] = []

    init(
        db: Database, store: Store, templates: [UTF8Key: [EdgeTemplate]], indexes: [String: IndexDefinition],
        defaultOwner: String
    ) throws {
        self.db = db
        self.store = store
        self.templates = templates
        self.indexes = indexes
        self.defaultOwner = defaultOwner
        now = store.configuration.clock()
        // Cached: preparing it (through GRDB's authorizer) cost a group commit of puts 5%.
        // Stepped raw, as `stampCommit`: GRDB's fetch costs more than the statement.
        commit =
            (try db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'commit'").firstInt64Raw { _ in } ?? 0) + 1
    }

    /// Records this transaction's commit number in the store, at its end.
    func stampCommit() throws {
        try db.cachedStatement(sql: "UPDATE meta SET value = ? WHERE key = 'commit'").executeRaw {
            sqlite3_bind_int64($0, 1, commit)
        }
    }

    var reads: Reads { Reads(db: db, roots: store.roots, hidden: pendingDeleteIDs) }

    // MARK: objects

    /// Creates or replaces an object (value and metadata both). Its owner is the value's
    /// top-level `owner` string, else `owner`, else the transaction's default owner.
    public func put(_ ref: ObjectRef, value: JSONValue, metadata: JSONValue? = nil, owner: String? = nil) throws {
        try ref.validate()
        let desired = try desiredEdges(collection: ref.collection, value: value)
        let effectiveOwner = value["owner"]?.stringValue ?? owner ?? defaultOwner
        guard !effectiveOwner.utf8.contains(0) else {
            throw StoreError(.invalidParams, "owner must not contain a NUL byte")
        }
        // As bytes: the insert binds them as they are (a String would validate and copy them).
        // The other texts follow in the same buffer, so the lookup and the insert bind them
        // all without a copy.
        var texts = [UInt8]()
        texts.reserveCapacity(128)
        value.write(to: &texts)
        let valueEnd = texts.count
        let collection = Self.append(ref.collection, to: &texts)
        let key = Self.append(ref.key, to: &texts)
        let ownerText = Self.append(effectiveOwner, to: &texts)
        let metadataText = metadata.map { Self.append($0.serialized(), to: &texts) }
        let id: Int64
        // Looked up first, not inserted with ON CONFLICT DO NOTHING: that saves a search for a
        // new key, but with AUTOINCREMENT every update would use up an id (and write
        // sqlite_sequence), and an update would search the key twice.
        let statements = try putStatements()
        if let existing = try statements.lookup
            .firstInt64Raw(
                borrowing: texts,
                { s, t in
                    Statement.bindBorrowedText(s, 1, t, collection)
                    Statement.bindBorrowedText(s, 2, t, key)
                })
        {
            id = existing
            try db.cachedStatement(
                sql: """
                    UPDATE object SET value = ?, metadata = ?, owner = ?, modified = ?, accessed = ? WHERE id = ?
                    """
            ).execute(arguments: [
                String(decoding: texts[..<valueEnd], as: UTF8.self),
                metadataText.map { String(decoding: texts[$0], as: UTF8.self) }, effectiveOwner, now, now, id,
            ])
            if pendingDeleteIDs.remove(id) != nil {
                pendingDeletes.removeAll { $0.id == id }  // deleted then put again: an update
            }
            // Files named in the value are probed above; the rest it holds are refreshed here.
            let named = Set(
                desired.compactMap { d -> [UInt8]? in
                    if case .file(let p) = d.destination { return Array(p.utf8) } else { return nil }
                })
            try refreshHeldFiles(of: id, except: named)
        } else {
            // With the size and file count the index refresh would write: writing the row
            // again rewrote it and two of its SQLite indexes.
            let held = HeldFiles(desired)
            // Bound through the C API: GRDB's arguments cost more than the insert's b-tree work.
            try statements.insert.executeRaw(borrowing: texts) { s, t in
                Statement.bindBorrowedText(s, 1, t, collection)
                Statement.bindBorrowedText(s, 2, t, key)
                Statement.bindBorrowedText(s, 3, t, 0..<valueEnd)
                if let metadataText { Statement.bindBorrowedText(s, 4, t, metadataText) }
                Statement.bindBorrowedText(s, 5, t, ownerText)
                for i in Int32(6)...8 { sqlite3_bind_double(s, i, now) }
                sqlite3_bind_int64(s, 9, held?.size ?? 0)
                sqlite3_bind_int64(s, 10, Int64(held?.files ?? 0))
            }
            id = sqlite3_last_insert_rowid(db.sqliteConnection)
            // A new object that declares no edge, with no user index to fill, is done: it has
            // nothing to derive, and its row of the built-in index (size and files 0) is its
            // own. Recording it would only cost the flush a pass over it.
            if desired.isEmpty && indexes.isEmpty {
                if !inserted.isEmpty { inserted[id] = nil }
                report.put.append(ref)
                return
            }
            inserted[id] = InsertedObject(held: held?.files == 0 ? nil : held)
        }
        if dirty.updateValue(desired, forKey: id) == nil { dirtyOrder.append(id) }
        report.put.append(ref)
    }

    /// Appends `text`'s UTF-8 bytes to `texts`; where they are.
    private static func append(_ text: String, to texts: inout [UInt8]) -> Range<Int> {
        let start = texts.count
        texts.append(contentsOf: text.utf8)
        return start..<texts.count
    }

    /// The put's lookup and insert, found once a transaction: GRDB's statement cache hashes
    /// the SQL text at each lookup, which was two hashes of about 100 bytes a put.
    private func putStatements() throws -> (lookup: Statement, insert: Statement) {
        if let cachedPutStatements { return cachedPutStatements }
        let found = (
            lookup: try db.cachedStatement(sql: "SELECT id FROM object WHERE collection = ? AND key = ?"),
            insert: try db.cachedStatement(
                sql: """
                    INSERT INTO object (collection, key, value, metadata, owner, created, modified, accessed, size, files)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
        )
        cachedPutStatements = found
        return found
    }

    /// The deletions' statements (WriteTransaction+Deletions.swift), found once a transaction.
    func deletionStatements() throws -> DeletionStatements {
        if let cachedDeletionStatements { return cachedDeletionStatements }
        let found = try DeletionStatements(db)
        cachedDeletionStatements = found
        return found
    }

    /// The id of the live object `ref` (nil if absent or already deleted in this transaction):
    /// `reads.objectID` through the put's lookup, found once a transaction and stepped raw.
    func liveObjectID(_ ref: ObjectRef) throws -> Int64? {
        let id = try putStatements().lookup.firstInt64Raw { s in
            Statement.bindText(s, 1, ref.collection)
            Statement.bindText(s, 2, ref.key)
        }
        guard let id, !pendingDeleteIDs.contains(id) else { return nil }
        return id
    }

    /// Bounds what the rules may delete for a caller (control.max_cascade_objects): a group
    /// commit serves several callers, and the smallest bound of theirs holds for all (one over
    /// it fails the batch, whose puts are then run alone, each under its own bound).
    public func limitCascade(to limit: Int?) {
        guard let limit else { return }
        cascadeLimit = min(cascadeLimit ?? limit, limit)
    }

    /// Deletes an object at commit (its rules run then); `not_found` if it does not exist.
    public func delete(_ ref: ObjectRef, cause: DeleteCause = .request) throws {
        try ref.validate()
        guard let id = try liveObjectID(ref) else {
            throw StoreError(.notFound, "no object \(ref)", detail: ref.json)
        }
        pendingDeleteIDs.insert(id)
        pendingDeletes.append((id, cause, ref))
    }

    /// Sets `accessed` to now in this transaction (never backwards). With `refreshingFiles`
    /// also re-reads the registry rows of its files, as a put does; the protocol's touches
    /// (transact's included) do not.
    public func touch(_ ref: ObjectRef, refreshingFiles: Bool = true) throws {
        try ref.validate()
        guard let id = try reads.objectID(ref) else {
            throw StoreError(.notFound, "no object \(ref)", detail: ref.json)
        }
        try db.cachedStatement(sql: "UPDATE object SET accessed = max(accessed, ?) WHERE id = ?")
            .execute(arguments: [now, id])
        try accessCounter()?.execute(arguments: [id, 1])
        if refreshingFiles {
            try refreshHeldFiles(of: id)
            indexDirty.insert(id)
        } else {
            accessDirty.insert(id)
        }
        report.touched.append(ref)
    }

    /// Pins an object (object.pin, assetd(8), CONTROL PROTOCOL, Methods): never evicted or expired
    /// until unpinned; `not_found` if absent.
    public func pin(_ ref: ObjectRef, _ pinned: Bool = true) throws {
        try ref.validate()
        guard let id = try reads.objectID(ref) else {
            throw StoreError(.notFound, "no object \(ref)", detail: ref.json)
        }
        try db.cachedStatement(sql: "UPDATE object SET pinned = ? WHERE id = ?").execute(arguments: [pinned, id])
    }

    /// True if the object is pinned.
    public func isPinned(_ ref: ObjectRef) throws -> Bool {
        guard let id = try reads.objectID(ref) else {
            throw StoreError(.notFound, "no object \(ref)", detail: ref.json)
        }
        return try Bool.fetchOne(db, sql: "SELECT pinned FROM object WHERE id = ?", arguments: [id]) ?? false
    }

    /// The object as this transaction sees it (deleted ones are gone), or nil.
    public func get(_ ref: ObjectRef) throws -> StoredObject? { try reads.get(ref) }

    /// True if the object exists for this transaction.
    public func exists(_ ref: ObjectRef) throws -> Bool { try reads.objectID(ref) != nil }

    /// The object's owner as this transaction sees it, or nil if it does not exist: without
    /// reading its value or its files, as `get` would.
    public func owner(_ ref: ObjectRef) throws -> String? {
        try ref.validate()
        return try reads.owner(ref)
    }

    /// A page of keys, as `ReadTransaction.list`.
    public func list(
        collection: String, after: String? = nil, limit: Int = 1000
    ) throws -> (keys: [String], next: String?) {
        try reads.list(collection: collection, after: after, limit: limit)
    }
}

/// What the flush knows of an object its transaction inserted (`WriteTransaction.inserted`).
struct InsertedObject {
    /// Not derived yet: it has no derived edges.
    var neverDerived = true
    /// Its index rows were never written: refreshing it deletes nothing (ids are never reused,
    /// so no old row can exist).
    var unindexed = true
    /// The size and file count its row was inserted with, when not 0 (HeldFiles), until a
    /// refresh or rebuild writes the row: when the refresh finds the same, it does not write
    /// the row again.
    var held: HeldFiles?

    /// Marks it derived; whether it was never derived before, and its figures.
    mutating func markDerived() -> (first: Bool, held: HeldFiles?) {
        defer { neverDerived = false }
        return (neverDerived, held)
    }
}
