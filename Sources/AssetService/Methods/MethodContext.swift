// What a method body runs with: the store, the caller, and what the daemon knows that the
// store does not (the connection, the last commit, progress and cancellation hooks).

import AssetStore
import ControlProtocol

/// What a method runs with.
public struct MethodContext: Sendable {
    /// The store.
    public var store: Store
    /// The caller.
    public var caller: Caller
    /// `control.enforce_ownership`.
    public var enforceOwnership: Bool
    /// The daemon's number for the client's connection: the holder of its leases. Nil
    /// in-process (`assetctl --db`), where no connection outlives the call.
    public var connection: UInt64?
    /// The latest commit the daemon has seen, for answers from memory on the loop (`ping`):
    /// nil in-process, where the store is asked.
    public var lastCommit: Int64?
    /// Reports how far a long method got (`{phase, done, total}`); nil unless the request
    /// asked with `progress: true`. Called on the method's thread; throttled by the receiver.
    public var progress: (@Sendable ([String: JSONValue]) -> Void)?
    /// The largest reply the daemon sends (control.max_reply_bytes): a query stops early past it.
    public var replyLimit = Int.max
    /// What a transact's earlier results already take of `replyLimit`: an edge.find page in
    /// it fills only what is left.
    public var replyUsed = 0
    /// The request's id, off the loop (nil on it and in-process): a method that fits its reply
    /// under `replyLimit` counts the id the reply will carry.
    public var requestID: RPCID?
    /// What the connection's leases, and all connections' leases, may hold (control.*lease_entries*):
    /// nil in-process, where no client can make the daemon keep anything.
    public var leaseBounds: LeaseBounds?
    /// The most objects the rules may delete for one request of this caller
    /// (control.max_cascade_objects): nil for admins, with 0 set, and in-process.
    public var cascadeLimit: Int?
    /// Raised when the client's connection closes: its query stops instead of running on.
    public var queryCancellation: QueryCancellation?

    public init(
        store: Store, caller: Caller, enforceOwnership: Bool, connection: UInt64? = nil,
        progress: (@Sendable ([String: JSONValue]) -> Void)? = nil
    ) {
        self.store = store
        self.caller = caller
        self.enforceOwnership = enforceOwnership
        self.connection = connection
        self.progress = progress
    }
}
