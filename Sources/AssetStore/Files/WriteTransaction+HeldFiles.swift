// A put of an existing object (or a store's touch) reads again the registry rows of the files
// it holds. That work follows the object's edges and their paths' depth, not the request's
// bytes, so it is done once a transaction for an object and a caller's uid, and a bounded
// caller's is charged to its request's allowance (WriteTransaction+ReadBound.swift), as are
// the looks at the files its put or edge.add names, by the same rule.

import GRDB

/// An object whose held files a transaction read again, and the uid of the check they were
/// read with (nil: unchecked, the same for every caller). The uid alone: the same uid with
/// other groups re-reads nothing it could not (same owner), and only updates rows.
struct HeldRecheck: Hashable {
    var object: Int64
    var uid: UInt32?
}

extension WriteTransaction {
    /// Re-reads the registry rows of the files an object holds (on every put and touch:
    /// assetd(8), DATA MODEL, Files), but those in `skip` (the put's value names them, and it
    /// probed them). Once a transaction for each check: a second read would find what the
    /// first did, and a file edge added in between was probed as it was added.
    func refreshHeldFiles(of id: Int64, except skip: Set<[UInt8]> = []) throws {
        let key = HeldRecheck(object: id, uid: fileReferenceCheck?.uid)
        guard !heldRechecked.contains(key) else { return }
        for (path, root) in try heldFilesToRead(of: id, except: skip) {
            if let check = fileReferenceCheck {
                // A caller's put judges what it reads again, as when it named the file: a
                // folder renamed in since (another user's) keeps the row as it was.
                guard let state = try? FileProbe.probe(path: path, root: root, roots: store.roots, check: check)
                else { continue }
                // Nor may it change which file a row another owner holds names (another file
                // there now, put by that owner): the row stays for that owner's next put.
                do {
                    _ = try registerFile(path: path, state: state)
                } catch let e as StoreError where e.code == .permissionDenied || e.code == .unsafePath {
                    continue
                }
            } else {
                // As `FileProbe.identity`, but a walk past the allowance refuses the request.
                var refused: StoreError?
                let state = try? FileProbe.probe(
                    path: path, root: root, roots: store.roots,
                    beforeWalk: { () throws(StoreError) in
                        do throws(StoreError) {
                            try self.chargeWalk(path, below: root, refusal: Self.heldFilesLimit)
                        } catch {
                            refused = error
                            throw error
                        }
                    })
                if let refused { throw refused }
                if let state {
                    // A row that names one of the store's own files now stays as it was.
                    do {
                        _ = try registerFile(path: path, state: state)
                    } catch let e as StoreError where e.code == .unsafePath {
                        continue
                    }
                }
            }
        }
        heldRechecked.insert(key)
    }

    /// Whether a put of `ref` now would read held files again, checked as `uid` (nil:
    /// unchecked): the object exists, holds a file through an edge, and this transaction has
    /// not read them again for that check. The group commit asks it of a put past its uid's
    /// share of a batch (docs/DESIGN.md): two indexed lookups.
    public func wouldReadHeldFilesAgain(_ ref: ObjectRef, checkedAs uid: UInt32?) throws -> Bool {
        let object = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM object WHERE collection = ? AND key = ?"),
            arguments: [ref.collection, ref.key])
        guard let id = object, !heldRechecked.contains(HeldRecheck(object: id, uid: uid)) else { return false }
        return try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM edge WHERE src = ? AND is_file = 1)"),
            arguments: [id]) ?? false
    }

    /// The files `id` holds that a refresh reads, with their roots (a file that cannot be
    /// looked at now keeps its row as it was), each once. Distinct by file id here: String
    /// equality would merge two paths that differ only in Unicode normalisation, and DISTINCT
    /// in SQL built a temporary b-tree each time. A bounded request is charged for each edge
    /// row read but the first to a file in `skip` what its look will cost (`lookCalls`), and
    /// refused (`query_rejected`) past what is left, before any file is looked at.
    private func heldFilesToRead(of id: Int64, except skip: Set<[UInt8]>) throws -> [(String, String)] {
        let limit = requestBound ?? cascadeLimit
        let budget = limit.map { allowance($0) }
        let left = budget?.left ?? .max
        let checked = fileReferenceCheck != nil
        var seen = Set<Int64>()
        var files = [(String, String)]()
        var charged = 0
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: "SELECT f.id, f.path FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1"),
            arguments: [id])
        while let row = try rows.next() {
            let path: String = row[1]
            let first = seen.insert(row[0]).inserted
            if first && !skip.isEmpty && skip.contains(Array(path.utf8)) { continue }
            let root = store.roots.root(of: path)
            if limit != nil {
                charged += Self.lookCalls(path, below: root, checked: checked)
                if charged > left, let limit { throw Self.heldFilesLimit(limit) }
            }
            guard first, let root else { continue }
            files.append((path, root))
        }
        budget?.left -= charged
        return files
    }

    /// Charges a bounded request (a non-admin's) the looks at the files its put or edge.add
    /// names, (path, root) each, before any of them, by the same rule as a held file's
    /// (`lookCalls`): past what its allowance has left it is refused (`query_rejected`) having
    /// looked at none. A path 2,000 folders deep fits PATH_MAX, and 200 of them a request:
    /// uncharged, one put held the writer ~10 s under enforce_ownership (0.05 s one folder
    /// deep; docs/DESIGN.md). Admins are not charged.
    func chargeNamedLooks(_ files: some Sequence<(String, String)>) throws {
        guard let limit = requestBound ?? cascadeLimit else { return }
        let budget = allowance(limit)
        let checked = fileReferenceCheck != nil
        var cost = 0
        for (path, root) in files {
            cost += Self.lookCalls(path, below: root, checked: checked)
            if cost > budget.left { throw Self.namedFilesLimit(limit) }
        }
        budget.left -= cost
    }

    /// Charges a bounded, unchecked request the rest of a look at `path` that `openat2` could
    /// not answer (a symlink or a mount as its last name, which the client can arrange): the
    /// walk that follows makes about five system calls for each component, as a checked look
    /// does, so it is charged at that rate, and refused (`refusal`) past what is left.
    func chargeWalk(_ path: String, below root: String, refusal: (Int) -> StoreError) throws(StoreError) {
        guard fileReferenceCheck == nil, let limit = requestBound ?? cascadeLimit else { return }
        let budget = allowance(limit)
        let more =
            Self.lookCalls(path, below: root, checked: true) - Self.lookCalls(path, below: root, checked: false)
        if more > budget.left { throw refusal(limit) }
        budget.left -= more
    }

    /// Allowance calls a look at `path` is charged, from its bytes alone (no system call): a
    /// checked walk makes about five system calls for each component below the root, about
    /// one call's time (100 SQLite steps); an unchecked `openat2` walks them in the kernel,
    /// far cheaper each. One more for the row.
    static func lookCalls(_ path: String, below root: String?, checked: Bool) -> Int {
        guard let root else { return 1 }
        var components = root.utf8.last == UInt8(ascii: "/") ? 1 : 0
        for byte in path.utf8.dropFirst(root.utf8.count) where byte == UInt8(ascii: "/") { components += 1 }
        return 1 + (checked ? components : components / 16)
    }

    static func namedFilesLimit(_ limit: Int) -> StoreError {
        StoreError(
            .queryRejected,
            "looking at the files this request names (each 1 + its path's folders below the root) would, with its "
                + "other reads, hold the writer longer than control.max_cascade_objects = \(limit) allows (about the "
                + "work of reading \(edgesPerCascadedObject) edges for each object): nothing was changed; name fewer "
                + "or shallower files at once, or ask an admin",
            detail: ["limit": "control.max_cascade_objects", "value": .int(Int64(limit))])
    }

    static func heldFilesLimit(_ limit: Int) -> StoreError {
        StoreError(
            .queryRejected,
            "the object holds more files than this request may read again: with its other reads, they would hold "
                + "the writer longer than control.max_cascade_objects = \(limit) allows (about the work of reading "
                + "\(edgesPerCascadedObject) edges for each object; one a file): nothing was changed; remove file "
                + "edges from it, put it in a request of its own, or ask an admin",
            detail: ["limit": "control.max_cascade_objects", "value": .int(Int64(limit))])
    }
}
