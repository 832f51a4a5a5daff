// The write transaction's manual edges: added or removed by name and ends, either end allowed
// to appear later in the transaction (the edge waits as a PendingEdge until both exist), and
// the row-level upsert that derived edges share.

import GRDB

extension WriteTransaction {
    /// Adds a manual edge, or replaces the rules of the same (name, source, destination).
    /// Either end may be created later in the transaction; at commit both must exist.
    public func addEdge(name: String, source: ObjectRef, destination: EdgeEnd, rules: DeleteRules) throws {
        try Edge.validate(name: name)
        try source.validate()
        let end = try resolveInput(destination)
        try rules.validate(fileDestination: end.isFile)
        let pending = PendingEdge(
            name: name, source: source, destination: end.end, rules: rules, fileState: end.state)
        _ = unresolved.remove(sameTripleAs: pending)
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
        if let p = unresolved.remove(sameTripleAs: pending) {
            // Added before an end existed: if both exist now it is a real edge and its rules
            // fire as for any other; otherwise it never was one.
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

    /// Edges matching the filter as this transaction sees them, in id order after the edge
    /// `after`, each with its id, read one at a time until `visit` returns false.
    public func edges(
        _ filter: EdgeFilter, after: Int64 = 0, limit: Int? = nil, _ visit: (Int64, Edge) throws -> Bool
    ) throws {
        try reads.edges(filter, after: after, limit: limit, visit)
    }

    /// The number of edges matching the filter as this transaction sees them.
    public func edgeCount(_ filter: EdgeFilter) throws -> Int { try reads.edgeCount(filter) }

    /// A file's registry row and edges as this transaction sees them.
    public func file(_ path: String) throws -> FileReport? { try reads.file(path) }

    /// Turns a destination given by a caller into a normalised, validated one.
    /// A file to register is probed (and judged) here, once: `state` is what registers it.
    private func resolveInput(
        _ end: EdgeEnd, register: Bool = true
    ) throws -> (end: EdgeEnd, isFile: Bool, state: FileState?) {
        switch end {
        case .object(let ref):
            try ref.validate()
            return (end, false, nil)
        case .file(let reference):
            let (path, root) = try store.roots.accept(reference)
            guard register else { return (.file(path), true, nil) }
            try chargeNamedLooks(CollectionOfOne((path, root)))
            let state = try FileProbe.probe(
                path: path, root: root, roots: store.roots, check: fileReferenceCheck,
                beforeWalk: { () throws(StoreError) in
                    try self.chargeWalk(path, below: root, refusal: Self.namedFilesLimit)
                })
            return (.file(path), true, state)
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
            // A checked caller's file registers as judged even if its path has a row: the row
            // may name another file than the one judged, or be claimed (registerFile decides).
            if let id = try reads.fileID(path), e.fileState?.judgement == nil || !register { return (src, true, id) }
            guard register, let root = store.roots.root(of: path) else { return nil }
            // As the caller's call judged it, not looked at again: a path renamed since would
            // register a file nobody judged.
            let state = try e.fileState ?? FileProbe.probe(path: path, root: root, roots: store.roots)
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
    /// Stepped raw, as the registry's insert: a put makes one each.
    func upsertEdge(src: Int64, name: String, isFile: Bool, dst: Int64, rules: DeleteRules, field: String?) throws {
        try edgeUpsert().executeRaw { s in
            Statement.bindText(s, 1, name)
            Statement.bindInt64(s, 2, src)
            Statement.bindInt64(s, 3, isFile ? 1 : 0)
            Statement.bindInt64(s, 4, dst)
            Statement.bindInt64(s, 5, Int64(rules.rawValue))
            if let field { Statement.bindText(s, 6, field) }  // else NULL
        }
        if isFile {
            indexDirty.insert(src)
            fileEdgeSources.insert(src)
            if field == nil { manuallyFiled.insert(src) }
        }
    }

    /// The edge upsert, found once a transaction (the statement cache hashes its SQL text).
    private func edgeUpsert() throws -> Statement {
        if let cachedEdgeUpsert { return cachedEdgeUpsert }
        let found = try db.cachedStatement(
            sql: """
                INSERT INTO edge (name, src, is_file, dst, rules, field) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (src, name, is_file, dst) DO UPDATE SET rules = excluded.rules, field = excluded.field
                WHERE excluded.field IS NULL OR edge.field IS NOT NULL
                """)
        cachedEdgeUpsert = found
        return found
    }
}

/// A manual edge waiting for an end to exist.
struct PendingEdge {
    var name: String
    var source: ObjectRef
    var destination: EdgeEnd
    var rules: DeleteRules
    /// The file destination as `addEdge` probed it, registered as such.
    var fileState: FileState? = nil

    var edge: Edge { Edge(name: name, source: source, destination: destination, rules: rules) }
}
