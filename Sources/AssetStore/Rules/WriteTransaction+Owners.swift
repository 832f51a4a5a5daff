// Objects and files apart between owners under control.enforce_ownership: the rules of an edge
// act only between objects of one owner. An edge whose ends are objects of different owners is a
// plain reference to its rules: either end going removes it (notify and nullify as usual), but it
// never deletes the other end, never denies a delete, and never keeps an object alive by reference
// counting. Ownership checks which manual edges a client may add, but an admin's template derives
// edges to whatever a value names, so without this one owner's edges could delete, or veto the
// delete of, another owner's objects. A file has no owner: any client may reference one, and a
// rule that deleted it would take every other owner's edges to it, and the objects their rules tie
// to it, with it. So a rule deletes a file only while no object of another owner holds it; a file
// held across owners is released by reference counting, going (by its last holder's rules) once
// no other owner holds it. Checked when the rule fires, so it covers manual and derived edges
// alike, and edges another owner adds after the deleting one.

import GRDB

extension Store {
    /// `control.enforce_ownership` (the daemon replaces it on SIGHUP).
    public var enforceOwnership: Bool {
        get { state.withLock { $0.enforceOwnership } }
        set { state.withLock { $0.enforceOwnership = newValue } }
    }
}

extension WriteTransaction {
    /// The rules by which an edge's destination going deletes its source.
    static let sourceDeleting: DeleteRules = [
        .deleteSourceIfDestinationDeleted, .deleteSourceIfAllDestinationsDeleted,
    ]

    /// Whether an edge retaining the object `?1` has a source of its owner. EXISTS stops at the
    /// first such edge, where a count would read every retainer and its source's row.
    static let ownedDestinationRetainers = """
        SELECT EXISTS (SELECT 1 FROM edge e JOIN object s ON s.id = e.src
        WHERE e.is_file = 0 AND e.dst = ?1 AND e.\(DeleteRules.deleteDestinationIfAllSourcesDeleted.sqlCondition)
        AND s.owner = (SELECT owner FROM object WHERE id = ?1) LIMIT 1)
        """

    /// Whether an edge retaining the object `?1` has a file or an object of its owner as destination.
    static let ownedSourceRetainers = """
        SELECT EXISTS (SELECT 1 FROM edge e LEFT JOIN object d ON e.is_file = 0 AND d.id = e.dst
        WHERE e.src = ?1 AND e.\(DeleteRules.deleteSourceIfAllDestinationsDeleted.sqlCondition)
        AND (e.is_file = 1 OR d.owner = (SELECT owner FROM object WHERE id = ?1)) LIMIT 1)
        """

    /// Called by `deleteObject` before an object's row goes: keeps its owner for the rules its
    /// edges fire once it is gone (`apart`, `heldByOthers`). `known` is the owner if read.
    func keepOwner(_ id: Int64, known: String?) throws {
        guard ownersApart else { return }
        ruleOwners[id] = try known ?? owner(of: id)
    }

    /// Whether the objects `a` and `b` have different owners under enforce_ownership (either
    /// may be gone in this transaction): then an edge between them is a plain reference to its
    /// rules. An end whose owner cannot be told (gone unrecorded, never there) counts as apart,
    /// so no rule acts on it.
    func apart(_ a: Int64, _ b: Int64) throws -> Bool {
        guard ownersApart else { return false }
        guard let first = try ruleOwners[a] ?? owner(of: a), let second = try ruleOwners[b] ?? owner(of: b)
        else { return true }
        return !UTF8Key.same(first, second)
    }

    /// Whether `e` is an edge between objects of different owners (never one to a file).
    func ownersDiffer(_ e: EdgeRow) throws -> Bool {
        try !e.isFile && apart(e.src, e.dst)
    }

    /// Whether the object `e` reaches must stay although `e`'s rule would delete it: with
    /// enforce_ownership, when its owner is not `e`'s source's.
    func ownedByOthers(_ e: EdgeRow) throws -> Bool {
        guard ownersApart, !e.isFile else { return false }
        // A source gone without a recorded owner cannot be told apart from another: keep.
        guard let sourceOwner = try ruleOwners[e.src] ?? owner(of: e.src) else { return true }
        // A destination already gone (or never there) has nothing to keep.
        guard let destinationOwner = try owner(of: e.dst) else { return false }
        return !UTF8Key.same(destinationOwner, sourceOwner)
    }

    /// Whether the file `e` reaches must stay although `e`'s rule would delete it: with
    /// enforce_ownership, when an object of an owner other than `e`'s source's holds it.
    func heldByOthers(_ e: EdgeRow) throws -> Bool {
        guard ownersApart, e.isFile else { return false }
        // A source gone without a recorded owner cannot be told apart from another: keep.
        guard let owner = try ruleOwners[e.src] ?? owner(of: e.src) else { return true }
        // Edges of objects this transaction deleted went with them.
        return try heldByOtherOwner(file: e.dst, owner: owner)
    }

    /// Whether an object whose owner is not `owner` holds the file `id`.
    func heldByOtherOwner(file id: Int64, owner: String) throws -> Bool {
        try holders(of: id, owner: owner, sameOwner: false) ?? true
    }

    /// Whether an object of `owner` holds the file `id`.
    func held(_ id: Int64, by owner: String) throws -> Bool {
        try holders(of: id, owner: owner, sameOwner: true) ?? false
    }

    private func holders(of id: Int64, owner: String, sameOwner: Bool) throws -> Bool? {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM edge e JOIN object o ON o.id = e.src
                    WHERE e.is_file = 1 AND e.dst = ? AND (o.owner = ?) = ?)
                    """),
            arguments: [id, owner, sameOwner])
    }

    private func owner(of id: Int64) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT owner FROM object WHERE id = ?"), arguments: [id])
    }
}

extension WriteTransaction.DeletionStatements {
    /// `ownedDestinationRetainers` and `ownedSourceRetainers`, found once a transaction at first
    /// use: only enforce_ownership needs them.
    func ownedRetainers() throws -> (destination: Statement, source: Statement) {
        if let owned { return owned }
        let found = (
            destination: try db.cachedStatement(sql: WriteTransaction.ownedDestinationRetainers),
            source: try db.cachedStatement(sql: WriteTransaction.ownedSourceRetainers)
        )
        owned = found
        return found
    }
}
