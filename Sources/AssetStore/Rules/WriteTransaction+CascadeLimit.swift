// The bound on what one request's rules may delete (control.max_cascade_objects), counted as
// the flush decides, so that a refusal costs about the bound's work, not the whole cascade's:
// an object when a rule decides to delete it (before its edges are read), an edge as its row
// is read for removal.

extension WriteTransaction {
    /// Edges the deletions of a bounded transaction may remove for each object the bound
    /// allows (the named objects' edges count too): a cascade through objects with many
    /// plain edges, or one object with millions, would otherwise cost unbounded work before
    /// the object count stopped it.
    static let edgesPerCascadedObject = 10

    /// Counts an object a rule decided to delete, once (not one a request named).
    func countCascade(_ id: Int64) throws {
        guard let limit = cascadeLimit, !requestedDeletes.contains(id), cascadeCounted.insert(id).inserted else {
            return
        }
        cascaded += 1
        if cascaded > limit { throw StoreError.cascadeLimit(limit) }
    }

    /// Counts an edge a deletion is removing.
    func countEdge() throws {
        guard let limit = cascadeLimit else { return }
        edgesCounted += 1
        let (objects, past) = limit.addingReportingOverflow(1)
        let (bound, over) = objects.multipliedReportingOverflow(by: Self.edgesPerCascadedObject)
        if !past, !over, edgesCounted > bound { throw StoreError.cascadeLimit(limit, edges: bound) }
    }
}
