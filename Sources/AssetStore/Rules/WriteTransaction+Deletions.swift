// The deletions of the rule worklist (assetd(8), DATA MODEL, Edges and delete rules): an object
// or a file goes with its edges, and each edge that went fires its rules as more work. The
// statements are stepped through the C API (a GRDB argument array and `Row` per statement cost
// more than SQLite's own work on these small rows). Rows are read, then deleted: a DELETE with
// RETURNING opens an ephemeral table at every run, which costs more than the read.

import GRDB

extension WriteTransaction {
    /// The worklist's statements, found once a transaction (the statement cache hashes the
    /// SQL text at every lookup).
    final class DeletionStatements {
        /// What `DeletedDetail` holds of an object.
        let object: Statement
        let deleteObject: Statement
        /// An object's edges out in index order, as `EdgeRow` reads them with the source's
        /// names NULL (the caller has them).
        let outgoing: Statement
        let deleteOutgoing: Statement
        /// The edges from other objects to an object, as `EdgeRow` reads them; the source's
        /// names are NULL for an edge whose source row is missing.
        let incoming: Statement
        let deleteIncoming: Statement
        /// A file's registry row, `RegisteredFile.columns`.
        let file: Statement
        let deleteFile: Statement
        /// `RegisteredFile.queueOne`.
        let queueUnlink: Statement
        /// The edges to a file, as `incoming`.
        let fileEdges: Statement
        let deleteFileEdges: Statement
        /// Edges that still keep a destination (object or file) alive by reference counting.
        let destinationRetainers: Statement
        /// Edges that still keep their source alive by reference counting.
        let sourceRetainers: Statement
        /// The inode and device of a file's registry row, if no edge references the file any more.
        let unreferencedFile: Statement
        /// `ownedRetainers()`'s statements, found at first use (WriteTransaction+Owners.swift).
        var owned: (destination: Statement, source: Statement)?
        let db: Database

        init(_ db: Database) throws {
            self.db = db
            func sql(_ text: String) throws -> Statement { try db.cachedStatement(sql: text) }
            object = try sql("SELECT collection, key, owner, pinned, created FROM object WHERE id = ?")
            deleteObject = try sql("DELETE FROM object WHERE id = ?")
            outgoing = try sql(
                """
                \(EdgeRow.columns(source: "NULL, NULL"))
                FROM edge e \(EdgeRow.destinationJoins)
                WHERE e.src = ? ORDER BY e.name, e.is_file, e.dst
                """)
            deleteOutgoing = try sql("DELETE FROM edge WHERE src = ?")
            incoming = try sql(Self.edgesTo(isFile: false))
            deleteIncoming = try sql("DELETE FROM edge WHERE is_file = 0 AND dst = ?")
            file = try sql("SELECT \(RegisteredFile.columns) FROM file WHERE id = ?")
            deleteFile = try sql("DELETE FROM file WHERE id = ?")
            queueUnlink = try sql(RegisteredFile.queueOne)
            fileEdges = try sql(Self.edgesTo(isFile: true))
            deleteFileEdges = try sql("DELETE FROM edge WHERE is_file = 1 AND dst = ?")
            destinationRetainers = try sql(
                """
                SELECT COUNT(*) FROM edge WHERE is_file = ? AND dst = ? AND \(DeleteRules.deleteDestinationIfAllSourcesDeleted.sqlCondition)
                """)
            sourceRetainers = try sql(
                """
                SELECT COUNT(*) FROM edge WHERE src = ? AND \(DeleteRules.deleteSourceIfAllDestinationsDeleted.sqlCondition)
                """)
            unreferencedFile = try sql(
                """
                SELECT inode, device FROM file WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM edge WHERE is_file = 1 AND dst = ?1)
                """)
        }

        /// The edges to the object or file `?`, in `edge_dst` order, each with its source's
        /// names; the destination's are left NULL (the caller has them).
        private static func edgesTo(isFile: Bool) -> String {
            """
            \(EdgeRow.columns(source: "s.collection, s.key", destination: "NULL, NULL, NULL"))
            FROM edge e LEFT JOIN object s ON s.id = e.src
            WHERE e.is_file = \(isFile ? 1 : 0) AND e.dst = ? ORDER BY e.rules, e.id
            """
        }
    }

    /// Deletes the object and its edges both ways; the edges' rules fire as work. `named` is
    /// the object's names when a request gave them (`delete`).
    func deleteObject(_ id: Int64, cause: DeleteCause, named: ObjectRef? = nil) throws {
        guard !deletedIDs.contains(id) else { return }
        let s = try deletionStatements()
        let bindID = { (p: OpaquePointer) in Statement.bindInt64(p, 1, id) }
        let ref: ObjectRef
        if let named {
            // `delete` found the row by these names, and until this flush nothing else can
            // delete it (a cascade marks `deletedIDs`; a put again cancels the delete), so it
            // is not read again. Its detail serves only a policy's evictions, which name none.
            ref = named
        } else {
            var found: DeletedDetail?
            try s.object.forEachRawRow(bindID) { r in
                found = DeletedDetail(
                    id: id, ref: ObjectRef(r.text(0) ?? "", r.text(1) ?? ""), owner: r.text(2) ?? "",
                    pinned: r.int64(3) != 0, created: r.double(4))
            }
            guard let detail = found else { return }
            deletedDetails.append(detail)
            ref = detail.ref
            try keepOwner(id, known: detail.owner)
        }
        if named != nil { try keepOwner(id, known: nil) }
        deletedIDs.insert(id)
        report.deleted.append(DeletedObject(ref: ref, cause: cause))
        // In index order, which `deleteReferenceCounted` reproduces for a whole batch.
        var outgoing = [EdgeRow]()
        let counting = cascadeLimit != nil
        try s.outgoing.forEachRawRow(bindID) { r in
            if counting { try countEdge() }
            var e = EdgeRow(raw: r)
            e.source = ref
            outgoing.append(e)
        }
        if !outgoing.isEmpty { try s.deleteOutgoing.executeRaw(bindID) }
        // Read after the edges out went: a self-edge is one of those, not also incoming.
        let incoming = try deleteEdges(s.incoming, s.deleteIncoming, to: id, destination: .object(ref))
        // A deny edge between objects of two owners refuses nothing (WriteTransaction+Owners.swift).
        for e in outgoing {
            if e.rules.contains(.denyDeleteSource), try !ownersDiffer(e) {
                denyChecks.append((e, e.dst, e.source.description))
            }
            report.edgesRemoved.append(RemovedEdge(edge: e.edge, reason: .sourceDeleted))
            work.append(.sourceGone(e))
        }
        for e in incoming {
            if e.rules.contains(.denyDeleteDestination), try !ownersDiffer(e) {
                denyChecks.append((e, e.src, e.destination.description))
            }
            report.edgesRemoved.append(RemovedEdge(edge: e.edge, reason: .destinationDeleted))
            work.append(.destinationGone(e))
        }
        // The row read or named above must be the one deleted: a request's delete that found
        // nothing would report an object that did not go.
        guard try s.deleteObject.executeRawCounting(bindID).changes == 1 else {
            throw StoreError(.internalError, "object \(ref) was deleted by something other than its delete")
        }
        if !indexes.isEmpty { try IndexTable.remove(id, indexes: Array(indexes.values), db) }
        if dirty.removeValue(forKey: id) != nil { dirtyOrder.removeAll { $0 == id } }
    }

    /// A file a rule deleted: every other edge to it goes as "destination deleted", and it
    /// joins the unlink queue in this transaction (assetd(8), DATA MODEL, Edges and delete rules).
    func deleteFile(_ id: Int64) throws {
        guard deletedFiles.insert(id).inserted else { return }
        let s = try deletionStatements()
        let bindID = { (p: OpaquePointer) in Statement.bindInt64(p, 1, id) }
        var found: RegisteredFile?
        try s.file.forEachRawRow(bindID) { r in found = RegisteredFile(r) }
        guard var row = found else { return }
        let path = row.path
        rowLeft(inode: row.inode, device: row.device)  // as recorded: `identify` may change them
        if row.device == nil || row.claim != .none { row.identify(store, claim: row.claim) }
        for e in try deleteEdges(s.fileEdges, s.deleteFileEdges, to: id, destination: .file(path)) {
            report.edgesRemoved.append(RemovedEdge(edge: e.edge, reason: .destinationDeleted))
            work.append(.destinationGone(e))
        }
        try row.queueUnlink(s.queueUnlink, commit: commit, now: now, delay: store.configuration.unlinkDelay)
        try s.deleteFile.executeRaw(bindID)
        report.filesQueued.append(path)
        queuedDetails.append(QueuedDetail(path: path, size: row.size, device: row.device))
    }

    /// Reads the edges to one object or file with `select` (`incoming` or `fileEdges`) and
    /// deletes them with `delete` if there are any. An edge whose source row is missing is
    /// deleted but not returned, as no join would find it.
    private func deleteEdges(
        _ select: Statement, _ delete: Statement, to id: Int64, destination: EdgeEnd
    ) throws -> [EdgeRow] {
        let bindID = { (p: OpaquePointer) in Statement.bindInt64(p, 1, id) }
        var edges = [EdgeRow]()
        var any = false
        let counting = cascadeLimit != nil
        try select.forEachRawRow(bindID) { r in
            any = true
            if counting { try countEdge() }
            guard !r.isNull(7) else { return }
            var e = EdgeRow(raw: r)
            e.destination = destination
            // `destinationGone` will delete this source whatever else holds (unless another
            // owner's): counted now, so a hub's sources past the bound stop the read, not the
            // work queued after it.
            if counting, e.rules.contains(.deleteSourceIfDestinationDeleted), !deletedIDs.contains(e.src),
                try !ownersDiffer(e)
            {
                try countCascade(e.src)
            }
            edges.append(e)
        }
        if any { try delete.executeRaw(bindID) }
        return edges
    }

    /// Drops the registry row of a file no edge references any more. Read first, as the
    /// list of shared files needs its identity (the usual case, still referenced, reads as
    /// much as a conditional delete did).
    func dropIfUnreferenced(file id: Int64) throws {
        let s = try deletionStatements()
        let bindID = { (p: OpaquePointer) in Statement.bindInt64(p, 1, id) }
        var found: (inode: Int64?, device: Int64?)?
        try s.unreferencedFile.forEachRawRow(bindID) { r in
            found = (r.isNull(0) ? nil : r.int64(0), r.isNull(1) ? nil : r.int64(1))
        }
        guard let found else { return }
        try s.deleteFile.executeRaw(bindID)
        rowLeft(inode: found.inode, device: found.device)
    }

    private func isGone(isFile: Bool, _ id: Int64) -> Bool {
        isFile ? deletedFiles.contains(id) : deletedIDs.contains(id)
    }

    /// The edge's source went: its destination-side rules fire, unless the destination is
    /// gone too (then nothing fires).
    /// A file whose edge went is checked for a registry row nobody references (`filesTouched`)
    /// unless it is known to stay referenced or to go: every removal of an edge to a file
    /// touches it, so the removal of the last edge that retains it checks it then.
    func sourceGone(_ e: EdgeRow) throws {
        guard !isGone(isFile: e.isFile, e.dst) else { return }
        if e.rules.contains(.notifyIfSourceDeleted), !e.isFile {
            notifyCandidates.append((e, e.dst, .sourceDeleted))
        }
        if e.rules.contains(.deleteDestinationIfSourceDeleted) {
            try ruleDeletesDestination(e)
        } else if e.rules.contains(.deleteDestinationIfAllSourcesDeleted) {
            // Under enforce_ownership only an object's own owner's edges keep it: another's
            // rules could never delete it, so counting them would keep it for ever.
            let s = try deletionStatements()
            let retainers: Int64?
            if ownersApart && !e.isFile {
                retainers = try s.ownedRetainers().destination.firstInt64Raw { Statement.bindInt64($0, 1, e.dst) }
            } else {
                retainers = try s.destinationRetainers.firstInt64Raw { p in
                    Statement.bindInt64(p, 1, e.isFile ? 1 : 0)
                    Statement.bindInt64(p, 2, e.dst)
                }
            }
            if retainers ?? 0 == 0 { try ruleDeletesDestination(e) }
        } else if e.isFile {
            filesTouched.insert(e.dst)
        }
    }

    /// `e`'s rule deletes its destination, unless that is an object of another owner or a
    /// file another owner holds: then the rule only lets go of it.
    private func ruleDeletesDestination(_ e: EdgeRow) throws {
        if !e.isFile {
            if try !ownedByOthers(e) {
                try countCascade(e.dst)
                work.append(.deleteObject(e.dst, .cascade, nil))
            }
        } else if try heldByOthers(e) {
            filesTouched.insert(e.dst)
        } else {
            work.append(.deleteFile(e.dst))
        }
    }

    /// The edge's destination went: its source-side rules fire, unless the source is gone. A
    /// source of another owner than the destination's only lets go (WriteTransaction+Owners.swift).
    func destinationGone(_ e: EdgeRow) throws {
        guard !deletedIDs.contains(e.src) else { return }
        if e.isFile { indexDirty.insert(e.src) }
        if e.rules.contains(.notifyIfDestinationDeleted) {
            notifyCandidates.append((e, e.src, .destinationDeleted))
        }
        guard !e.rules.isDisjoint(with: Self.sourceDeleting) else { return }
        if try ownersDiffer(e) {
            // The source would have gone with its destination; it stays, so it is told, and a
            // derived field naming the gone object is nulled: its owner's next put of the value
            // would otherwise fail on an edge to nothing.
            if e.field != nil, !e.rules.contains(.notifyIfDestinationDeleted) {
                notifyCandidates.append((e, e.src, .destinationDeleted))
            }
            return
        }
        if e.rules.contains(.deleteSourceIfDestinationDeleted) {
            try countCascade(e.src)
            work.append(.deleteObject(e.src, .cascade, nil))
        } else if e.rules.contains(.deleteSourceIfAllDestinationsDeleted) {
            let s = try deletionStatements()
            let count = try ownersApart ? s.ownedRetainers().source : s.sourceRetainers
            let retainers = try count.firstInt64Raw { Statement.bindInt64($0, 1, e.src) }
            if retainers ?? 0 == 0 {
                try countCascade(e.src)
                work.append(.deleteObject(e.src, .cascade, nil))
            }
        }
    }
}
