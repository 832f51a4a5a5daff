// The manual edges a write transaction holds until both their ends exist, in the order they
// were added (the order they are written in at the flush), found by their triple in a
// dictionary: a transact of many such edges looked each one up in a list, quadratic in them.

/// An edge's (name, source, destination) as SQLite's unique key compares it: by bytes, not by
/// Swift's canonical equivalence, under which two distinct edges would replace each other.
struct EdgeTripleKey: Hashable {
    enum End: Hashable {
        case object(ObjectRefKey)
        case file(UTF8Key)
    }

    var name: UTF8Key
    var source: ObjectRefKey
    var destination: End

    init(_ e: PendingEdge) {
        name = UTF8Key(e.name)
        source = ObjectRefKey(e.source)
        switch e.destination {
        case .object(let ref): destination = .object(ObjectRefKey(ref))
        case .file(let path): destination = .file(UTF8Key(path))
        }
    }
}

/// Pending edges in insertion order, at most one a triple.
struct PendingEdges {
    /// In the order added; nil where one was removed since (compacted once they are many).
    private var slots: [PendingEdge?] = []
    private var index: [EdgeTripleKey: Int] = [:]

    var isEmpty: Bool { index.isEmpty }

    /// Removes and returns the pending edge with `e`'s triple, if any.
    mutating func remove(sameTripleAs e: PendingEdge) -> PendingEdge? {
        guard let at = index.removeValue(forKey: EdgeTripleKey(e)) else { return nil }
        defer { slots[at] = nil }
        return slots[at]
    }

    /// Adds `e` last, replacing (and moving) one with its triple.
    mutating func append(_ e: PendingEdge) {
        _ = remove(sameTripleAs: e)
        // Holes past half the slots: the list is rebuilt, so adding and removing the same
        // edges for ever keeps it bounded by the live ones (amortised O(1) an edge).
        if slots.count >= 32, slots.count > 2 * index.count { self = PendingEdges(taking: all) }
        index[EdgeTripleKey(e)] = slots.count
        slots.append(e)
    }

    /// Every pending edge, in the order added.
    private var all: [PendingEdge] { slots.compactMap { $0 } }

    /// Takes every pending edge, in the order added, leaving none.
    mutating func takeAll() -> [PendingEdge] {
        defer { self = PendingEdges() }
        return all
    }

    private init(taking edges: [PendingEdge]) {
        slots = edges
        index.reserveCapacity(edges.count)
        for (i, e) in edges.enumerated() { index[EdgeTripleKey(e)] = i }
    }

    init() {}
}
