// What one committed write transaction did, so the daemon can answer the request and send
// events after commit without asking the database again.

/// Why an object was deleted.
public enum DeleteCause: String, Sendable, Hashable {
    /// A client asked.
    case request
    /// A rule deleted it because another node went.
    case cascade
    /// A lifecycle policy evicted or expired it.
    case policy
}

/// One deleted object.
public struct DeletedObject: Sendable, Hashable {
    /// Which object.
    public var ref: ObjectRef
    /// Why.
    public var cause: DeleteCause
}

/// One removed edge and why.
public struct RemovedEdge: Sendable, Hashable {
    /// The edge as it was.
    public var edge: Edge
    /// Why it went.
    public var reason: EdgeRemovalReason
}

/// A surviving node told that an edge of its went (assetd(8), DATA MODEL, Edges and delete rules).
public struct EdgeNotification: Sendable, Hashable {
    /// The edge that went.
    public var edge: Edge
    /// The node notified (it survives the transaction).
    public var node: ObjectRef
    /// `sourceDeleted` (the source went) or `destinationDeleted`.
    public var reason: EdgeRemovalReason
    /// The field set to null in the node's value (Nullify), if the edge was derived.
    public var nullifiedField: String?
}

/// Everything a commit did.
public struct CommitReport: Sendable {
    /// The commit number.
    public var commit: Int64 = 0
    /// Objects put, in order.
    public var put: [ObjectRef] = []
    /// Objects touched.
    public var touched: [ObjectRef] = []
    /// Objects deleted: requested ones first, then cascades in the order processed.
    public var deleted: [DeletedObject] = []
    /// Every edge removed, with its reason.
    public var edgesRemoved: [RemovedEdge] = []
    /// Notifications, once per edge, to nodes that survive.
    public var notifications: [EdgeNotification] = []
    /// Files queued for unlinking, in order.
    public var filesQueued: [String] = []
}
