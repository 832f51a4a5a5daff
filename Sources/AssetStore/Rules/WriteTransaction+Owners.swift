// Objects and files apart between owners under control.enforce_ownership: a rule of an edge
// whose source one owner owns never deletes another owner's object, nor a file while an object
// of another owner holds it. Ownership checks which manual edges a client may add, but an admin's
// template derives edges to whatever a value names, and a file has no owner of its own: any
// client may reference one, and a rule that deleted it would take every other owner's edges to
// it, and the objects their rules tie to it, with it. Such a rule only lets go: another owner's
// object stays, and a file held across owners is released by reference counting, going (by its
// last holder's rules) once no other owner holds it. Checked when the rule fires, so it covers
// manual and derived edges alike, and edges another owner adds after the deleting one.

import GRDB

extension Store {
    /// `control.enforce_ownership` (the daemon replaces it on SIGHUP).
    public var enforceOwnership: Bool {
        get { state.withLock { $0.enforceOwnership } }
        set { state.withLock { $0.enforceOwnership = newValue } }
    }
}

extension WriteTransaction {
    /// The rules by which an edge's source going deletes its destination.
    static let destinationDeleting: DeleteRules = [
        .deleteDestinationIfSourceDeleted, .deleteDestinationIfAllSourcesDeleted,
    ]

    /// Called by `deleteObject` with an object's edges out before its row goes: keeps the
    /// owner of one whose edges can delete their destination, for `sourceGone` to ask
    /// `heldByOthers` or `ownedByOthers`.
    func keepRuleOwner(_ id: Int64, edges: [EdgeRow]) throws {
        guard ownersApart, edges.contains(where: { !$0.rules.isDisjoint(with: Self.destinationDeleting) })
        else { return }
        ruleOwners[id] = try owner(of: id)
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
