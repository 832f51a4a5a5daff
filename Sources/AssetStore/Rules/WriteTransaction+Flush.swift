// Rule processing (assetd(8), DATA MODEL, Edges and delete rules), run at commit and by an explicit
// flush: derive edges of the objects put, resolve pending manual edges, then work through
// deletions, edges gone and files deleted until nothing changes. Deny and notify are settled once,
// at commit, against what survives the whole transaction.

import GRDB
import JSON

/// A flush did more rule work than `ruleWorkLimit` allows (the caller undoes it).
struct RuleWorkLimitReached: Error {}

extension WriteTransaction {
    /// One unit of rule work.
    enum Work {
        /// An object, with its names when a request gave them.
        case deleteObject(Int64, DeleteCause, ObjectRef?)
        case deleteFile(Int64)
        case sourceGone(EdgeRow)
        case destinationGone(EdgeRow)
        /// What the flush leaves in a slot it took the item from: nothing to do.
        case taken
    }

    /// Processes everything recorded so far, as a commit would, inside the transaction.
    /// Edges naming objects not created yet stay pending until commit. If a flush throws, the
    /// transaction can only roll back: committing it throws too.
    public func flush() throws {
        try flush(final: false)
    }

    func flush(final: Bool) throws {
        if let failed = flushFailure { throw failed }
        do {
            try process(final: final)
        } catch {
            flushFailure = error
            throw error
        }
    }

    private func process(final: Bool) throws {
        derivedSized = []
        try deriveDirtyEdges(final: final)
        try resolvePendingEdges(final: final)
        work += pendingDeletes.map { .deleteObject($0.id, $0.cause, $0.ref) }
        if cascadeLimit != nil { requestedDeletes = Set(pendingDeletes.map(\.id)) }
        pendingDeletes = []
        pendingDeleteIDs = []
        for (row, reason) in removedWithReason {
            work.append(reason == .sourceDeleted ? .sourceGone(row) : .destinationGone(row))
        }
        removedWithReason = []
        // Rule work may delete files, and with them edges of objects derived above.
        if !work.isEmpty { derivedSized = [] }
        var i = 0
        while i < work.count {
            ruleWorkDone += 1
            if let limit = ruleWorkLimit, ruleWorkDone > limit { throw RuleWorkLimitReached() }
            // Moved out, not copied: the item's strings are not retained again, and the
            // placeholder left costs nothing to destroy.
            var w = Work.taken
            swap(&w, &work[i])
            i += 1
            switch consume w {
            case .deleteObject(let id, let cause, let ref): try deleteObject(id, cause: cause, named: ref)
            case .deleteFile(let id): try deleteFile(id)
            case .sourceGone(let e): try sourceGone(e)
            case .destinationGone(let e): try destinationGone(e)
            case .taken: break
            }
        }
        work = []
        requestedDeletes = []
        try nullify()
        // A registry row lives as long as some edge references the file.
        for id in filesTouched where !deletedFiles.contains(id) { try dropIfUnreferenced(file: id) }
        filesTouched = []
        let refreshed = indexDirty.union(accessDirty).subtracting(deletedIDs).sorted()
        // Each object's standing, its `inserted` entry taken as the refresh writes its rows.
        var standings = [IndexTable.Standing]()
        standings.reserveCapacity(refreshed.count)
        for id in refreshed {
            guard let new = inserted.removeValue(forKey: id) else {
                // Only touched: its row's figures stand.
                standings.append(IndexTable.Standing(sized: !indexDirty.contains(id)))
                continue
            }
            if new.neverDerived { inserted[id] = InsertedObject(unindexed: false) }
            standings.append(
                IndexTable.Standing(
                    unindexed: new.unindexed, fileless: new.unindexed && !fileEdgeSources.contains(id),
                    presized: new.held,
                    sized: derivedSized.contains(id) && (manuallyFiled.isEmpty || !manuallyFiled.contains(id))))
        }
        try IndexTable.refresh(refreshed, standings, indexes: Array(indexes.values), db)
        derivedSized = []
        indexDirty = []
        accessDirty = []
    }

    /// Flushes, settles deny and notify, and stamps the commit number.
    func finish() throws -> CommitReport {
        try flush(final: true)
        for check in denyChecks where !deletedIDs.contains(check.otherEnd) {
            if try objectExists(id: check.otherEnd) {
                let e = check.edge.edge
                let message: String =
                    "\(check.protected) cannot be deleted while edge \"\(e.name)\" from "
                    + "\(e.source) to \(e.destination) stands"
                throw StoreError(.deleteDenied, message, detail: e.json)
            }
        }
        // Once per edge: by name and the names of its ends, since an edge removed and added
        // again in one transaction is the same edge under new row ids (a file's too).
        var notified = Set<[UInt8]>()
        for c in notifyCandidates
        where !deletedIDs.contains(c.node)
            && notified.insert(
                Array("\(c.edge.name)\u{0}\(c.edge.source)\u{0}\(c.edge.isFile)\u{0}\(c.edge.destination)".utf8)
            ).inserted
        {
            let nodeRef = c.reason == .sourceDeleted ? destinationRef(c.edge) : c.edge.source
            guard let nodeRef else { continue }
            report.notifications.append(
                EdgeNotification(
                    edge: c.edge.edge, node: nodeRef, reason: c.reason,
                    nullifiedField: c.reason == .destinationDeleted ? c.edge.field : nil))
        }
        try dropLeftShared()
        try stampCommit()
        report.commit = commit
        return report
    }

    private func destinationRef(_ e: EdgeRow) -> ObjectRef? {
        if case .object(let r) = e.destination { return r }
        return nil
    }

    private func objectExists(id: Int64) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM object WHERE id = ?)"), arguments: [id])
            ?? false
    }

    // MARK: derived and pending edges

    /// Brings each put object's derived edges in line with its value: new ones inserted,
    /// changed rules updated, ones no longer declared removed as "source went". An edge that
    /// went because its template changed or went (not the value) is removed quietly. Before
    /// commit, an object naming an object that does not exist yet stays pending.
    private func deriveDirtyEdges(final: Bool) throws {
        let order = dirtyOrder
        let desiredByID = dirty
        dirty = [:]
        dirtyOrder = []
        var dropped = [(row: EdgeRow, fires: Bool)]()
        for id in order {
            guard let desired = desiredByID[id] else { continue }
            let going = pendingDeleteIDs.contains(id)
            // Resolve object ends first, so an object is either derived whole or left pending.
            var targets = [Int64?]()
            for d in desired {
                guard case .object(let ref) = d.destination else { targets.append(nil); continue }
                let target = try rowID(ref)
                if target == nil && !going {
                    guard final else {
                        dirty[id] = desired
                        dirtyOrder.append(id)
                        break
                    }
                    let e = Edge(
                        name: d.template.name, source: try objectRef(id), destination: d.destination,
                        rules: d.template.rules, kind: .derived(field: d.template.field.text))
                    throw StoreError(
                        .danglingEdge, "edge \"\(e.name)\" from \(e.source) names \(ref), which does not exist",
                        detail: e.json)
                }
                targets.append(target)
            }
            if dirty[id] != nil { continue }
            var existing = [DerivedEdgeKey: EdgeRow]()
            let derived = inserted[id]?.markDerived()  // one lookup, in place
            let first = derived?.first ?? false
            let held = derived?.held
            if !first {
                for row in try EdgeRow.fetch(db, where: "e.src = ? AND e.field IS NOT NULL", [id]) {
                    existing[DerivedEdgeKey(name: UTF8Key(row.name), isFile: row.isFile, dst: row.dst)] = row
                }
            }
            var collection: String?
            for (d, target) in zip(desired, targets) {
                let isFile: Bool
                let dst: Int64
                switch d.destination {
                case .file(let path):
                    isFile = true
                    dst = try registerFile(path: path, state: d.fileState ?? .missing)
                case .object:
                    // An object about to be deleted may name anything: its edges go anyway.
                    guard let target else { continue }
                    isFile = false
                    dst = target
                }
                if !existing.isEmpty,
                    let old = existing.removeValue(
                        forKey: DerivedEdgeKey(name: UTF8Key(d.template.name), isFile: isFile, dst: dst)),
                    old.rules == d.template.rules, let field = old.field, UTF8Key.same(field, d.template.field.text)
                {
                    continue
                }
                try upsertEdge(
                    src: id, name: d.template.name, isFile: isFile, dst: dst, rules: d.template.rules,
                    field: d.template.field.text)
            }
            for row in existing.values.sorted(by: { $0.id < $1.id }) {
                collection = collection ?? row.source.collection
                let current = EdgeTemplate.effective(templates[UTF8Key(collection!)] ?? [])
                dropped.append((row, current.contains { $0.declares(row) }))
            }
            // Its registry rows now hold its own probes, so its row holds the truth if it was
            // inserted with figures from this same value (HeldFiles) and had no other edges.
            if first, let held, HeldFiles(desired) == held { derivedSized.insert(id) }
            indexDirty.insert(id)
        }
        for (row, fires) in dropped {
            try db.cachedStatement(sql: "DELETE FROM edge WHERE id = ?").execute(arguments: [row.id])
            report.edgesRemoved.append(RemovedEdge(edge: row.edge, reason: fires ? .sourceDeleted : .edge))
            if row.isFile { filesTouched.insert(row.dst) }
            if fires { work.append(.sourceGone(row)) }
        }
    }

    private func objectRef(_ id: Int64) throws -> ObjectRef {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT collection, key FROM object WHERE id = ?"), arguments: [id])
        return ObjectRef(row?[0] ?? "", row?[1] ?? "")
    }

    /// Manual edges added before their ends existed: at commit both ends must exist; before
    /// it, an edge still missing an end stays pending.
    private func resolvePendingEdges(final: Bool) throws {
        for p in unresolved.takeAll() {
            guard let row = try resolve(p) else {
                if !final {
                    unresolved.append(p)
                    continue
                }
                let missing = try rowID(p.source) == nil ? p.source.description : p.destination.description
                throw StoreError(
                    .danglingEdge, "edge \"\(p.name)\" from \(p.source) to \(p.destination): \(missing) does not exist",
                    detail: p.edge.json)
            }
            try upsertEdge(src: row.src, name: p.name, isFile: row.isFile, dst: row.dst, rules: p.rules, field: nil)
        }
    }

    /// Core Data's Nullify: a surviving source whose derived edge went with
    /// notifyIfDestinationDeleted loses that reference from its value.
    private func nullify() throws {
        for c in notifyCandidates[nullifyCursor...] where c.reason == .destinationDeleted {
            guard let field = c.edge.field, let path = JSONPath(field), !deletedIDs.contains(c.node),
                let text = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT value FROM object WHERE id = ?"), arguments: [c.node])
            else { continue }
            let target: String
            switch c.edge.destination {
            case .object(let r): target = r.key
            case .file(let p): target = p
            }
            // As bytes: a canonically equal path or key in other bytes names another file or object.
            let matches: (String) -> Bool = { s in
                let spelled = c.edge.isFile ? try? ManagedRoots.normalise(s) : s
                return spelled?.utf8.elementsEqual(target.utf8) ?? false
            }
            let old = try Reads.json(text)
            let new = path.updating(old) { v in
                switch v {
                case .string(let s) where matches(s): return .null
                case .array(let items): return .array(items.filter { !($0.stringValue.map(matches) ?? false) })
                default: return v
                }
            }
            if new != old {
                try db.cachedStatement(sql: "UPDATE object SET value = ?, modified = ? WHERE id = ?")
                    .execute(arguments: [new.serialized(), now, c.node])
                indexDirty.insert(c.node)
            }
        }
        nullifyCursor = notifyCandidates.count
    }
}

/// A derived edge of one source as its unique index knows it: by the bytes of its name.
private struct DerivedEdgeKey: Hashable {
    let name: UTF8Key
    let isFile: Bool
    let dst: Int64
}
