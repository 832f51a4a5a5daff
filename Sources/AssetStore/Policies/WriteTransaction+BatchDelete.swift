// Policy deletions without the rule worklist: a batch whose objects only hold files through
// reference counting (the built-in `file` template) and that nothing points at is deleted with
// a few set-based statements. What it records — report, deleted and queued details, files
// queued in order — must equal what `process` records for the same batch; anything else goes
// to the worklist.

import GRDB
import JSON

extension WriteTransaction {
    /// True when an edge points at one of the objects `?1`.
    private static let pointedAt = """
        SELECT EXISTS (SELECT 1 FROM edge WHERE is_file = 0 AND dst IN (SELECT value FROM json_each(?1)))
        """
    /// For each file of `?1`: the edges to it, and how many of them retain it (the `edge_dst`
    /// index holds all three columns, so no edge row is read).
    private static let edgesToFiles = """
        SELECT dst, COUNT(*), SUM(\(DeleteRules.deleteDestinationIfAllSourcesDeleted.sqlCondition)) FROM edge
        WHERE is_file = 1 AND dst IN (SELECT value FROM json_each(?1)) GROUP BY dst
        """

    /// The edges of the objects `?1`, then the registry row of a file destination from
    /// `fileColumn` on. The source's and an object destination's names are left NULL: the
    /// caller has the sources' rows, and an edge to an object sends the batch to the worklist.
    private static let edgesWithFiles = """
        SELECT e.id, e.name, e.src, e.is_file, e.dst, e.rules, e.field, NULL, NULL, NULL, NULL, f.path,
            f.size, f.device, f.inode, f.birth, f.generation, f.ctime, f.claim
        FROM edge e LEFT JOIN file f ON e.is_file = 1 AND f.id = e.dst
        WHERE e.src IN (SELECT value FROM json_each(?1)) ORDER BY e.src, e.name, e.is_file, e.dst
        """
    /// Where `edgesWithFiles` has `RegisteredFile.columns` (its `f.path` is EdgeRow's 12th column).
    private static let fileColumn: Int32 = 11

    /// Deletes `requested` (cause `policy`) as `flush` would, or returns false having changed
    /// nothing when some rule needs the worklist: an edge to one of them, an edge of theirs to
    /// an object or with a rule other than deleteDestinationIfAllSourcesDeleted, or a file
    /// they free that another edge still reaches (its rules would fire). Call with no other
    /// intent pending, as `evict` does. `known` holds object rows read earlier in this
    /// transaction; when it has them all, they are not read again. Returns, for each file
    /// queued, the position among the deleted objects of the first whose edge reached it
    /// (`EvictionEffect.holders`).
    func deleteReferenceCounted(_ requested: [Int64], known: [Int64: DeletedDetail] = [:]) throws -> [Int]? {
        guard let batch = try planReferenceCounted(requested, known: known) else { return nil }
        return try deleteReferenceCounted(batch)
    }

    /// What `deleteReferenceCounted` decides, read and not yet changed: nil when some rule
    /// needs the worklist. Changes nothing, in SQL or in the transaction's state.
    func planReferenceCounted(_ requested: [Int64], known: [Int64: DeletedDetail]) throws -> ReferenceCountedBatch? {
        guard store.configuration.setBasedPolicyDeletes, work.isEmpty, pendingDeletes.isEmpty, dirty.isEmpty,
            unresolved.isEmpty, removedWithReason.isEmpty, filesTouched.isEmpty, indexDirty.isEmpty,
            accessDirty.isEmpty,
            flushFailure == nil
        else { return nil }
        // Sized up front, here and below: growing a set or dictionary hashes every key again.
        var seen = Set<Int64>(minimumCapacity: requested.count)
        let ids = requested.filter { !deletedIDs.contains($0) && seen.insert($0).inserted }
        guard !ids.isEmpty else { return nil }
        let idList = JSONValue.array(ids.map { .int($0) }).serialized()

        let trusted = ids.allSatisfy { known[$0] != nil }
        var details = trusted ? known : [Int64: DeletedDetail](minimumCapacity: ids.count)
        if !trusted {
            try db.cachedStatement(
                sql: """
                    SELECT id, collection, key, owner, pinned, created FROM object WHERE id IN (SELECT value FROM json_each(?))
                    """
            ).forEachRawRow([idList]) { r in
                let id = r.int64(0)
                details[id] = DeletedDetail(
                    id: id, ref: ObjectRef(r.text(1) ?? "", r.text(2) ?? ""), owner: r.text(3) ?? "",
                    pinned: r.int64(4) != 0, created: r.double(5))
            }
            guard details.count == ids.count else { return nil }
        }
        // Each object's edges in the order `deleteObject` reads them, with the registry rows
        // of the files they reach (`RegisteredFile.columns` after the edge's own).
        var outgoing = [Int64: [EdgeRow]](minimumCapacity: ids.count)
        var fileRows = [Int64: RegisteredFile](minimumCapacity: ids.count)
        var onlyCounted = true
        try db.cachedStatement(sql: Self.edgesWithFiles).forEachRawRow([idList]) { r in
            var e = EdgeRow(raw: r)
            guard e.isFile, e.rules.isSubset(of: .deleteDestinationIfAllSourcesDeleted), let source = details[e.src]
            else {
                onlyCounted = false
                return
            }
            e.source = source.ref
            outgoing[e.src, default: []].append(e)
            if !r.isNull(Self.fileColumn) { fileRows[e.dst] = RegisteredFile(r, from: Self.fileColumn) }
        }
        guard onlyCounted else { return nil }
        if try Bool.fetchOne(db.cachedStatement(sql: Self.pointedAt), arguments: [idList]) ?? true { return nil }
        let edges = ids.flatMap { outgoing[$0] ?? [] }
        // The worklist sees every object go before any edge fires, so a file goes when no
        // retaining edge from outside the batch is left, in the order its first retaining edge fires.
        var touched = [Int64]()
        var retained = [Int64]()
        var inside = [Int64: (all: Int64, retaining: Int64)](minimumCapacity: edges.count)
        var position = [Int64: Int](minimumCapacity: ids.count)
        for (i, id) in ids.enumerated() { position[id] = i }
        var firstHolder = [Int64: Int](minimumCapacity: edges.count)
        for e in edges {
            let retains = e.rules.contains(.deleteDestinationIfAllSourcesDeleted)
            let n = inside[e.dst]
            if n == nil {
                touched.append(e.dst)
                firstHolder[e.dst] = position[e.src]
            }
            if retains && (n?.retaining ?? 0) == 0 { retained.append(e.dst) }
            inside[e.dst] = ((n?.all ?? 0) + 1, (n?.retaining ?? 0) + (retains ? 1 : 0))
        }
        // Edges from outside the batch: all the edges to each file less the batch's own.
        var outside = [Int64: (all: Int64, retaining: Int64)]()
        if !touched.isEmpty {
            let files = JSONValue.array(touched.map { .int($0) }).serialized()
            try db.cachedStatement(sql: Self.edgesToFiles).forEachRawRow([files]) { r in
                let dst = r.int64(0)
                let mine = inside[dst] ?? (0, 0)
                let other = (all: r.int64(1) - mine.all, retaining: r.int64(2) - mine.retaining)
                if other.all != 0 { outside[dst] = other }
            }
        }
        let freed = retained.filter { (outside[$0]?.retaining ?? 0) == 0 }
        if freed.contains(where: { (outside[$0]?.all ?? 0) > 0 }) { return nil }
        return ReferenceCountedBatch(
            ids: ids, idList: idList, details: details, outgoing: outgoing, fileRows: fileRows, touched: touched,
            freed: freed, firstHolder: firstHolder)
    }

    /// Makes the changes `batch` decided: the same `deleteObject`, `sourceGone` and
    /// `deleteFile` make. Returns the holders as `deleteReferenceCounted` does.
    func deleteReferenceCounted(_ batch: ReferenceCountedBatch) throws -> [Int] {
        let (ids, idList, details, outgoing, fileRows) = (
            batch.ids, batch.idList, batch.details, batch.outgoing, batch.fileRows
        )
        let (touched, freed, firstHolder) = (batch.touched, batch.freed, batch.firstHolder)
        try db.cachedStatement(sql: "DELETE FROM edge WHERE src IN (SELECT value FROM json_each(?))").execute(
            arguments: [idList])
        try db.cachedStatement(sql: "DELETE FROM object WHERE id IN (SELECT value FROM json_each(?))").execute(
            arguments: [idList])
        // Rows read earlier in this transaction are all still there (nothing else writes in it).
        guard db.changesCount == ids.count else {
            throw StoreError(
                .internalError,
                "a policy batch found \(ids.count - db.changesCount) of its \(ids.count) objects gone inside its own transaction; the transaction is rolled back"
            )
        }
        try IndexTable.remove(all: idList, indexes: Array(indexes.values), db)
        deletedIDs.reserveCapacity(deletedIDs.count + ids.count)
        deletedFiles.reserveCapacity(deletedFiles.count + freed.count)
        for id in ids {
            let detail = details[id]!  // every id was found above
            deletedIDs.insert(id)
            report.deleted.append(DeletedObject(ref: detail.ref, cause: .policy))
            deletedDetails.append(detail)
            for e in outgoing[id] ?? [] {
                report.edgesRemoved.append(RemovedEdge(edge: e.edge, reason: .sourceDeleted))
            }
        }
        let freedList = JSONValue.array(freed.map { .int($0) }).serialized()
        let delay = store.configuration.unlinkDelay
        // Usually every file is identified, none claimed: then one statement queues them all, in order.
        let identified = freed.allSatisfy { fileRows[$0].map { $0.device != nil && $0.claim == .none } ?? true }
        if identified && !freed.isEmpty {
            try db.cachedStatement(sql: RegisteredFile.queueIdentified).execute(
                arguments: [commit, now, now + delay, freedList])
        }
        var holders = [Int]()
        holders.reserveCapacity(freed.count)
        for id in freed {
            deletedFiles.insert(id)
            guard var row = fileRows[id] else { continue }
            if !identified {
                row.identify(store, claim: row.claim)
                try row.queueUnlink(db, commit: commit, now: now, delay: delay)
            }
            report.filesQueued.append(row.path)
            queuedDetails.append(QueuedDetail(path: row.path, size: row.size, device: row.device))
            holders.append(firstHolder[id] ?? 0)
        }
        try db.cachedStatement(sql: "DELETE FROM file WHERE id IN (SELECT value FROM json_each(?))").execute(
            arguments: [freedList])
        // A registry row lives as long as some edge references the file.
        let kept = touched.filter { !deletedFiles.contains($0) }
        if !kept.isEmpty {
            try db.cachedStatement(
                sql: """
                    DELETE FROM file WHERE id IN (SELECT value FROM json_each(?))
                    AND NOT EXISTS (SELECT 1 FROM edge WHERE is_file = 1 AND dst = file.id)
                    """
            ).execute(arguments: [JSONValue.array(kept.map { .int($0) }).serialized()])
        }
        // The rows freed and those looked at (gone or kept) are noted; at commit the list of
        // shared files drops any of their files fewer than two rows name.
        for id in touched { rowLeft(inode: fileRows[id]?.inode, device: fileRows[id]?.device) }
        nullifyCursor = notifyCandidates.count
        return holders
    }
}

/// A batch `planReferenceCounted` found fit for the set-based delete, as read.
struct ReferenceCountedBatch {
    /// The objects, distinct, in the order asked, and as a JSON array.
    var ids: [Int64]
    var idList: String
    var details: [Int64: DeletedDetail]
    /// Each object's edges, all to files and only reference counting.
    var outgoing: [Int64: [EdgeRow]]
    var fileRows: [Int64: RegisteredFile]
    /// Files an edge of the batch reaches, in the order their first edge fires.
    var touched: [Int64]
    /// Files the batch frees, in the same order.
    var freed: [Int64]
    /// For each touched file, the position in `ids` of its first holder.
    var firstHolder: [Int64: Int]

    /// The paths of the files the deletion would queue, in order.
    var queuedPaths: some Sequence<String> { freed.lazy.compactMap { fileRows[$0]?.path } }
}
