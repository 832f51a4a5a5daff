// The write transaction's API: objects, manual edges, templates, index definitions. Calls
// only record intent (deletes wait for commit, derived edges are derived at flush), so the
// rules see the state at commit: a key deleted and put again is an update.

import GRDB
import GRDBSQLite
import JSON

/// The one write transaction at a time. Everything it does commits together, or nothing.
public final class WriteTransaction {
    let db: Database
    let store: Store
    /// This transaction's commit number.
    public let commit: Int64
    /// Unix seconds at the start of the transaction.
    public let now: Double
    let defaultOwner: String
    var templates: [String: [EdgeTemplate]]
    var indexes: [String: IndexDefinition]

    // Recorded by calls, consumed by flush.
    /// Objects to delete, in request order, with why.
    var pendingDeletes: [(id: Int64, cause: DeleteCause)] = []
    var pendingDeleteIDs: Set<Int64> = []
    /// Objects put since the last flush, with the derived edges their value declares.
    var dirty: [Int64: [DesiredEdge]] = [:]
    var dirtyOrder: [Int64] = []
    /// Objects inserted by this transaction and not yet derived: they have no derived edges.
    var neverDerived: Set<Int64> = []
    /// Objects inserted by this transaction whose index rows were never written: refreshing
    /// them deletes nothing (ids are never reused, so no old row can exist).
    var unindexed: Set<Int64> = []
    /// Objects given a file edge by this transaction (index refresh looks up the files of
    /// these and of objects it did not create). Not restored when a savepoint rolls back, for
    /// simplicity: a superset only costs a query.
    var fileEdgeSources: Set<Int64> = []
    /// The error of a flush that failed: the transaction can only roll back.
    var flushFailure: (any Error)?
    /// Manual edges whose source or destination object does not exist yet.
    var unresolved: [PendingEdge] = []
    /// Edges removed with a reason, whose rules fire at flush.
    var removedWithReason: [(EdgeRow, EdgeRemovalReason)] = []

    // Flush working state.
    var work: [Work] = []
    var indexDirty: Set<Int64> = []
    var filesTouched: Set<Int64> = []
    var deletedFiles: Set<Int64> = []

    // Whole-transaction state, checked at commit.
    var deletedIDs: Set<Int64> = []
    var denyChecks: [(edge: EdgeRow, otherEnd: Int64, protected: String)] = []
    var notifyCandidates: [(edge: EdgeRow, node: Int64, reason: EdgeRemovalReason)] = []
    /// Candidates before this index have had their Nullify applied.
    var nullifyCursor = 0
    var report = CommitReport()
    private var cachedPutStatements: (lookup: Statement, insert: Statement)?
    /// Each deleted object's owner and protection, for the policy planner.
    var deletedDetails: [DeletedDetail] = []
    /// Each queued file's size and device, for the policy planner.
    var queuedDetails: [QueuedDetail] = []

    init(
        db: Database, store: Store, templates: [String: [EdgeTemplate]], indexes: [String: IndexDefinition],
        defaultOwner: String
    ) throws {
        self.db = db
        self.store = store
        self.templates = templates
        self.indexes = indexes
        self.defaultOwner = defaultOwner
        now = store.configuration.clock()
        // Cached: preparing it (through GRDB's authorizer) cost a group commit of puts 5%.
        commit = (try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'commit'")) ?? 0) + 1
    }

    var reads: Reads { Reads(db: db, roots: store.roots, hidden: pendingDeleteIDs) }

    // MARK: objects

    /// Creates or replaces an object (value and metadata both). Its owner is the value's
    /// top-level `owner` string, else `owner`, else the transaction's default owner.
    public func put(_ ref: ObjectRef, value: JSONValue, metadata: JSONValue? = nil, owner: String? = nil) throws {
        try ref.validate()
        let desired = try desiredEdges(collection: ref.collection, value: value)
        let effectiveOwner = value["owner"]?.stringValue ?? owner ?? defaultOwner
        guard !effectiveOwner.utf8.contains(0) else { throw StoreError(.invalidParams, "owner must not contain a NUL byte") }
        let valueText = value.serialized()
        let metadataText = metadata.map { $0.serialized() }
        let id: Int64
        // Looked up first, not inserted with ON CONFLICT DO NOTHING: that saves a search for a
        // new key, but with AUTOINCREMENT every update would use up an id (and write
        // sqlite_sequence), and an update would search the key twice.
        let statements = try putStatements()
        if let existing = try statements.lookup
            .firstInt64Raw({ s in
                Statement.bindText(s, 1, ref.collection)
                Statement.bindText(s, 2, ref.key)
            })
        {
            id = existing
            try db.cachedStatement(sql: """
                UPDATE object SET value = ?, metadata = ?, owner = ?, modified = ?, accessed = ? WHERE id = ?
                """).execute(arguments: [valueText, metadataText, effectiveOwner, now, now, id])
            if pendingDeleteIDs.remove(id) != nil {
                pendingDeletes.removeAll { $0.id == id }  // deleted then put again: an update
            }
            // Files named in the value are probed above; the rest it holds are refreshed here.
            let named = Set(desired.compactMap { d -> [UInt8]? in
                if case .file(let p) = d.destination { return Array(p.utf8) } else { return nil }
            })
            try refreshHeldFiles(of: id, except: named)
        } else {
            // Bound through the C API: GRDB's arguments cost more than the insert's b-tree work.
            try statements.insert.executeRaw { s in
                Statement.bindText(s, 1, ref.collection)
                Statement.bindText(s, 2, ref.key)
                Statement.bindText(s, 3, valueText)
                if let metadataText { Statement.bindText(s, 4, metadataText) }
                Statement.bindText(s, 5, effectiveOwner)
                for i in Int32(6)...8 { sqlite3_bind_double(s, i, now) }
            }
            id = db.lastInsertedRowID
            neverDerived.insert(id)
            unindexed.insert(id)
        }
        if dirty.updateValue(desired, forKey: id) == nil { dirtyOrder.append(id) }
        report.put.append(ref)
    }

    /// The put's lookup and insert, found once a transaction: GRDB's statement cache hashes
    /// the SQL text at each lookup, which was two hashes of about 100 bytes a put.
    private func putStatements() throws -> (lookup: Statement, insert: Statement) {
        if let cachedPutStatements { return cachedPutStatements }
        let found = (
            lookup: try db.cachedStatement(sql: "SELECT id FROM object WHERE collection = ? AND key = ?"),
            insert: try db.cachedStatement(sql: """
                INSERT INTO object (collection, key, value, metadata, owner, created, modified, accessed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """))
        cachedPutStatements = found
        return found
    }

    /// Deletes an object at commit (its rules run then); `not_found` if it does not exist.
    public func delete(_ ref: ObjectRef, cause: DeleteCause = .request) throws {
        try ref.validate()
        guard let id = try reads.objectID(ref) else {
            throw StoreError(.notFound, "no object \(ref)", detail: ref.json)
        }
        pendingDeleteIDs.insert(id)
        pendingDeletes.append((id, cause))
    }

    /// Sets `accessed` to now and refreshes the registry rows of its files.
    public func touch(_ ref: ObjectRef) throws {
        try ref.validate()
        guard let id = try reads.objectID(ref) else { throw StoreError(.notFound, "no object \(ref)", detail: ref.json) }
        try db.cachedStatement(sql: "UPDATE object SET accessed = ? WHERE id = ?").execute(arguments: [now, id])
        try refreshHeldFiles(of: id)
        indexDirty.insert(id)
        report.touched.append(ref)
    }

    /// Pins an object (SPEC §9): never evicted or expired until unpinned; `not_found` if absent.
    public func pin(_ ref: ObjectRef, _ pinned: Bool = true) throws {
        try ref.validate()
        guard let id = try reads.objectID(ref) else { throw StoreError(.notFound, "no object \(ref)", detail: ref.json) }
        try db.cachedStatement(sql: "UPDATE object SET pinned = ? WHERE id = ?").execute(arguments: [pinned, id])
    }

    /// True if the object is pinned.
    public func isPinned(_ ref: ObjectRef) throws -> Bool {
        guard let id = try reads.objectID(ref) else { throw StoreError(.notFound, "no object \(ref)", detail: ref.json) }
        return try Bool.fetchOne(db, sql: "SELECT pinned FROM object WHERE id = ?", arguments: [id]) ?? false
    }

    /// The object as this transaction sees it (deleted ones are gone), or nil.
    public func get(_ ref: ObjectRef) throws -> StoredObject? { try reads.get(ref) }

    /// True if the object exists for this transaction.
    public func exists(_ ref: ObjectRef) throws -> Bool { try reads.objectID(ref) != nil }

    /// A page of keys, as `ReadTransaction.list`.
    public func list(collection: String, after: String? = nil, limit: Int = 1000) throws -> (keys: [String], next: String?) {
        try reads.list(collection: collection, after: after, limit: limit)
    }

    // MARK: edges

    /// Adds a manual edge, or replaces the rules of the same (name, source, destination).
    /// Either end may be created later in the transaction; at commit both must exist.
    public func addEdge(name: String, source: ObjectRef, destination: EdgeEnd, rules: DeleteRules) throws {
        guard !name.isEmpty, !name.utf8.contains(0) else {
            throw StoreError(.invalidParams, "an edge needs a name without NUL bytes")
        }
        try source.validate()
        let end = try resolveInput(destination)
        try rules.validate(fileDestination: end.isFile)
        let pending = PendingEdge(name: name, source: source, destination: end.end, rules: rules)
        unresolved.removeAll { $0.sameTriple(pending) }
        if let row = try resolve(pending) {
            try upsertEdge(src: row.src, name: name, isFile: row.isFile, dst: row.dst, rules: rules, field: nil)
        } else {
            unresolved.append(pending)
        }
    }

    /// Removes an edge. With reason `edge` nothing fires; `sourceDeleted` and
    /// `destinationDeleted` fire the rules of that side at commit. False if there was none.
    @discardableResult
    public func removeEdge(
        name: String, source: ObjectRef, destination: EdgeEnd, reason: EdgeRemovalReason = .edge
    ) throws -> Bool {
        try source.validate()
        let end = try resolveInput(destination, register: false)
        let pending = PendingEdge(name: name, source: source, destination: end.end, rules: [])
        if let before = unresolved.firstIndex(where: { $0.sameTriple(pending) }) {
            // Added before an end existed: if both exist now it is a real edge and its rules
            // fire as for any other; otherwise it never was one.
            let p = unresolved.remove(at: before)
            guard let row = try resolve(p) else { return true }
            try upsertEdge(src: row.src, name: p.name, isFile: row.isFile, dst: row.dst, rules: p.rules, field: nil)
        }
        guard let target = try resolve(pending, register: false),
            let row = try EdgeRow.fetch(
                db, where: "e.src = ? AND e.name = ? AND e.is_file = ? AND e.dst = ?",
                [target.src, name, target.isFile, target.dst]
            ).first
        else { return false }
        try db.cachedStatement(sql: "DELETE FROM edge WHERE id = ?").execute(arguments: [row.id])
        report.edgesRemoved.append(RemovedEdge(edge: row.edge, reason: reason))
        if row.isFile {
            filesTouched.insert(row.dst)
            indexDirty.insert(row.src)
        }
        if reason != .edge { removedWithReason.append((row, reason)) }
        return true
    }

    /// Edges matching the filter as this transaction sees them.
    public func edges(_ filter: EdgeFilter) throws -> [Edge] { try reads.edges(filter) }

    /// The number of edges matching the filter as this transaction sees them.
    public func edgeCount(_ filter: EdgeFilter) throws -> Int { try reads.edgeCount(filter) }

    /// A file's registry row and edges as this transaction sees them.
    public func file(_ path: String) throws -> FileReport? { try reads.file(path) }

    // MARK: templates and indexes

    /// Replaces a collection's templates and re-derives the edges of its objects. Edges the
    /// new templates no longer declare are removed as with reason `edge`: changing a template
    /// never deletes objects or unlinks files by itself.
    public func setTemplate(collection: String, edges: [EdgeTemplate]) throws {
        try ObjectRef(collection, "x").validate()
        for e in edges { try e.validate() }
        // An edge name is one edge per destination: two fields under one name could not be
        // told apart when one of them must be nulled.
        var names = Set<String>()
        for e in edges where !names.insert(e.name).inserted {
            throw StoreError(.invalidParams, "template edge name \"\(e.name)\" appears twice in \(collection)")
        }
        if edges.isEmpty {
            try db.execute(sql: "DELETE FROM template WHERE collection = ?", arguments: [collection])
            templates[collection] = nil
        } else {
            try db.execute(
                sql: "INSERT OR REPLACE INTO template (collection, edges) VALUES (?, ?)",
                arguments: [collection, JSONValue.array(edges.map(\.json)).serialized()])
            templates[collection] = edges
        }
        let rows = try Row.fetchAll(db, sql: "SELECT id, value FROM object WHERE collection = ?", arguments: [collection])
        for row in rows {
            let id: Int64 = row[0]
            let desired = try desiredEdges(collection: collection, value: try Reads.json(row[1]))
            if dirty.updateValue(desired, forKey: id) == nil { dirtyOrder.append(id) }
        }
    }

    /// Defines (or redefines) a user index; a changed definition is rebuilt now.
    public func defineIndex(_ def: IndexDefinition, progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil) throws {
        try def.validate()
        if indexes[def.name] == def { return }
        try IndexTable.drop(def.name, db)
        try IndexTable.create(def, db)
        try db.execute(
            sql: "INSERT OR REPLACE INTO secondary_index (name, definition) VALUES (?, ?)",
            arguments: [def.name, def.json.serialized()])
        indexes[def.name] = def
        unindexed = []  // populated with every object, this transaction's too
        try IndexTable.populate(name: def.name, def: def, db, progress: progress)
    }

    /// Rebuilds an index (the built-in one too) from the objects.
    public func rebuildIndex(_ name: String, progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil) throws {
        guard name == IndexDefinition.defaultName || indexes[name] != nil else {
            throw StoreError(.notFound, "no index \"\(name)\"")
        }
        unindexed = []
        try IndexTable.populate(name: name, def: indexes[name], db, progress: progress)
    }

    // MARK: helpers

    /// Turns a destination given by a caller into a normalised, validated one.
    private func resolveInput(_ end: EdgeEnd, register: Bool = true) throws -> (end: EdgeEnd, isFile: Bool) {
        switch end {
        case .object(let ref):
            try ref.validate()
            return (end, false)
        case .file(let reference):
            let (path, root) = try store.roots.accept(reference)
            if register { _ = try FileProbe.probe(path: path, root: root, roots: store.roots.paths) }
            return (.file(path), true)
        }
    }

    /// Row ids of both ends, or nil if an object end does not exist (yet). Registers files.
    func resolve(_ e: PendingEdge, register: Bool = true) throws -> (src: Int64, isFile: Bool, dst: Int64)? {
        guard let src = try rowID(e.source) else { return nil }
        switch e.destination {
        case .object(let ref):
            guard let dst = try rowID(ref) else { return nil }
            return (src, false, dst)
        case .file(let path):
            if let id = try reads.fileID(path) { return (src, true, id) }
            guard register, let root = store.roots.root(of: path) else { return nil }
            let state = try FileProbe.probe(path: path, root: root, roots: store.roots.paths)
            return (src, true, try registerFile(path: path, state: state))
        }
    }

    /// The row id of an object, including one deleted earlier in this transaction but not yet
    /// processed: edges to it are real until the delete runs (and then go with their rules).
    func rowID(_ ref: ObjectRef) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM object WHERE collection = ? AND key = ?"),
            arguments: [ref.collection, ref.key])
    }

    /// Inserts an edge or replaces the rules of the same triple. A manual edge (field nil)
    /// takes over a derived one; a derived edge never takes over a manual one.
    func upsertEdge(src: Int64, name: String, isFile: Bool, dst: Int64, rules: DeleteRules, field: String?) throws {
        try db.cachedStatement(sql: """
            INSERT INTO edge (name, src, is_file, dst, rules, field) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (src, name, is_file, dst) DO UPDATE SET rules = excluded.rules, field = excluded.field
            WHERE excluded.field IS NULL OR edge.field IS NOT NULL
            """).execute(arguments: [name, src, isFile, dst, rules.rawValue, field])
        if isFile {
            indexDirty.insert(src)
            fileEdgeSources.insert(src)
        }
    }

    /// Re-reads the registry rows of the files an object holds (SPEC §1: on put and touch).
    private func refreshHeldFiles(of id: Int64, except skip: Set<[UInt8]> = []) throws {
        // Made distinct here, by file id (String equality would merge two paths that differ
        // only in Unicode normalisation): DISTINCT in SQL built a temporary b-tree each time.
        var seen = Set<Int64>()
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT f.id, f.path FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1"),
            arguments: [id])
        for row in rows where seen.insert(row[0]).inserted {
            let path: String = row[1]
            guard !skip.contains(Array(path.utf8)) else { continue }
            if let root = store.roots.root(of: path) {
                _ = try registerFile(path: path, state: FileProbe.identity(path: path, root: root, roots: store.roots.paths))
            }
        }
    }

    /// Inserts or refreshes a registry row; a size change re-indexes every holder.
    func registerFile(path: String, state: FileState) throws -> Int64 {
        if let row = try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT id, size, device, inode, mtime, missing, birth, generation, ctime FROM file WHERE path = ?
                """),
            arguments: [path])
        {
            let id: Int64 = row[0]
            let size: Int64 = row[1]
            let stamp = state.stamp
            let was = FileStamp(birth: row[6], generation: row[7], ctime: row[8])
            let changed = size != state.size || row[2] != state.device || row[3] != state.inode
                || row[4] != state.mtime || row[5] != !state.exists
            if changed || was != stamp {
                try db.cachedStatement(sql: """
                    UPDATE file SET size = ?, device = ?, inode = ?, mtime = ?, missing = ?, birth = ?, generation = ?,
                    ctime = ? WHERE id = ?
                    """).execute(arguments: [
                        state.size, state.device, state.inode, state.mtime, !state.exists, stamp.birth,
                        stamp.generation, stamp.ctime, id,
                    ])
            }
            if size != state.size {
                let holders = try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT src FROM edge WHERE is_file = 1 AND dst = ?"), arguments: [id])
                indexDirty.formUnion(holders)
            }
            return id
        }
        try db.cachedStatement(sql: """
            INSERT INTO file (path, size, device, inode, mtime, missing, first_seen, birth, generation, ctime)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                path, state.size, state.device, state.inode, state.mtime, !state.exists, now, state.stamp.birth,
                state.stamp.generation, state.stamp.ctime,
            ])
        let id = db.lastInsertedRowID
        // Taken again: a queued unlink of this path (from this or an earlier commit) is cancelled.
        try db.cachedStatement(sql: "DELETE FROM unlink_queue WHERE path = ?").execute(arguments: [path])
        if db.changesCount > 0 { report.filesQueued.removeAll { $0.utf8.elementsEqual(path.utf8) } }
        return id
    }

    /// The derived edges a value declares under the collection's templates. Paths are
    /// validated and probed here, so a bad path fails the put that named it.
    func desiredEdges(collection: String, value: JSONValue) throws -> [DesiredEdge] {
        var out = [DesiredEdge]()
        for t in EdgeTemplate.effective(templates[collection] ?? []) {
            for reference in t.references(in: value) {
                switch t.to {
                case .file:
                    let (path, root) = try store.roots.accept(reference)
                    let state = try FileProbe.probe(path: path, root: root, roots: store.roots.paths)
                    out.append(DesiredEdge(template: t, destination: .file(path), fileState: state))
                case .collection(let c):
                    let ref = ObjectRef(c, reference)
                    try ref.validate()
                    out.append(DesiredEdge(template: t, destination: .object(ref), fileState: nil))
                }
            }
        }
        return out
    }
}

/// A derived edge an object's value declares.
struct DesiredEdge {
    var template: EdgeTemplate
    var destination: EdgeEnd
    var fileState: FileState?
}

/// A manual edge waiting for an end to exist.
struct PendingEdge {
    var name: String
    var source: ObjectRef
    var destination: EdgeEnd
    var rules: DeleteRules

    func sameTriple(_ o: PendingEdge) -> Bool {
        name == o.name && source == o.source && destination == o.destination
    }

    var edge: Edge { Edge(name: name, source: source, destination: destination, rules: rules) }
}
