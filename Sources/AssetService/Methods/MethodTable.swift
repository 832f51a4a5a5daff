// The control protocol's methods as plain functions over a Store, with no event loop: the
// daemon runs them on its thread pool, and `assetctl --db` runs them in-process. Each method
// lives in its own file as an extension of MethodTable.

import AssetStore
import ControlProtocol
import Foundation

/// Who is calling, from the socket's peer credentials.
public struct Caller: Sendable {
    /// The client's uid.
    public var uid: UInt32
    /// The client's user name (or the uid as text).
    public var userName: String
    /// True for uid 0, the daemon's uid, and configured admins.
    public var isAdmin: Bool

    public init(uid: UInt32, userName: String, isAdmin: Bool) {
        self.uid = uid
        self.userName = userName
        self.isAdmin = isAdmin
    }
}

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
    /// Reports how far a long method got (`{phase, done, total}`); nil unless the request
    /// asked with `progress: true`. Called on the method's thread; throttled by the receiver.
    public var progress: (@Sendable ([String: JSONValue]) -> Void)?
    /// The largest reply the daemon sends (control.max_reply_bytes): a query stops early past it.
    public var replyLimit = Int.max
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

/// A method's result and what the daemon must do about it.
public struct MethodOutcome: Sendable {
    /// Something for the session or daemon to do besides replying.
    public enum Action: Sendable {
        case none
        /// Start sending events matching the filter.
        case watch(EventFilter)
        /// Stop sending events.
        case unwatch
        /// Stop the daemon after replying.
        case shutdown
    }

    /// The JSON-RPC result.
    public var result: JSONValue
    /// What the commit did, for events.
    public var commit: CommitReport?
    /// Commits after the first, in order (a policy run commits once per batch).
    public var moreCommits: [CommitReport] = []
    /// What a sweep did, for events.
    public var sweep: SweepReport?
    /// What else to do.
    public var action: Action = .none

    public init(_ result: JSONValue, commit: CommitReport? = nil, sweep: SweepReport? = nil, action: Action = .none) {
        self.result = result
        self.commit = commit
        self.sweep = sweep
        self.action = action
    }
}

/// Which events a watcher gets.
public struct EventFilter: Sendable, Equatable {
    /// Collections whose object and edge events pass; nil for all.
    public var collections: Set<String>?
    /// Event types that pass; nil for all.
    public var types: Set<String>?

    public init(collections: Set<String>? = nil, types: Set<String>? = nil) {
        self.collections = collections
        self.types = types
    }
}

/// Every method of SPEC §6.
public enum MethodTable {
    /// One method: whether only admins may call it, and its body.
    public struct Method: Sendable {
        public let adminOnly: Bool
        /// False only for methods that touch no database: the rest run on the thread pool.
        public let slow: Bool
        let run: @Sendable (Params, MethodContext) throws -> MethodOutcome
    }

    /// The methods by name.
    public static let methods: [String: Method] = [
        "ping": Method(adminOnly: false, slow: true, run: ping),
        "object.put": Method(adminOnly: false, slow: true, run: objectPut),
        "object.get": Method(adminOnly: false, slow: true, run: objectGet),
        "object.delete": Method(adminOnly: false, slow: true, run: objectDelete),
        "object.touch": Method(adminOnly: false, slow: true, run: objectTouch),
        "object.list": Method(adminOnly: false, slow: true, run: objectList),
        "edge.add": Method(adminOnly: false, slow: true, run: edgeAdd),
        "edge.remove": Method(adminOnly: false, slow: true, run: edgeRemove),
        "edge.find": Method(adminOnly: false, slow: true, run: edgeFind),
        "edge.count": Method(adminOnly: false, slow: true, run: edgeCount),
        "transact": Method(adminOnly: false, slow: true, run: transact),
        "template.set": Method(adminOnly: false, slow: true, run: templateSet),
        "template.get": Method(adminOnly: false, slow: true, run: templateGet),
        "index.define": Method(adminOnly: false, slow: true, run: indexDefine),
        "index.list": Method(adminOnly: false, slow: true, run: indexList),
        "index.query": Method(adminOnly: false, slow: true, run: indexQuery),
        "index.aggregate": Method(adminOnly: false, slow: true, run: indexAggregate),
        "file.get": Method(adminOnly: false, slow: true, run: fileGet),
        "watch": Method(adminOnly: false, slow: false, run: watch),
        "unwatch": Method(adminOnly: false, slow: false, run: unwatch),
        "stats": Method(adminOnly: false, slow: true, run: stats),
        "sweep": Method(adminOnly: false, slow: true, run: sweep),
        "pending": Method(adminOnly: false, slow: true, run: pending),
        "pending.forget": Method(adminOnly: true, slow: true, run: pendingForget),
        "shutdown": Method(adminOnly: true, slow: false, run: shutdown),
        // On the pool: a lease of objects waits for a policy batch under way to commit. A lease
        // granted after its connection closed is ended when the reply would go (Session.run).
        "lease.acquire": Method(adminOnly: false, slow: true, run: leaseAcquire),
        "lease.release": Method(adminOnly: false, slow: true, run: leaseRelease),
        "lease.list": Method(adminOnly: false, slow: false, run: leaseList),
        "object.pin": Method(adminOnly: false, slow: true, run: objectPin),
        "object.unpin": Method(adminOnly: false, slow: true, run: objectUnpin),
        "checkpoint": Method(adminOnly: true, slow: true, run: checkpoint),
        "policy.enforce": Method(adminOnly: false, slow: true, run: policyEnforce),
        "policy.evict": Method(adminOnly: false, slow: true, run: policyEvict),
        "policy.expire": Method(adminOnly: false, slow: true, run: policyExpire),
        "verify": Method(adminOnly: false, slow: true, run: verify),
        "backup": Method(adminOnly: true, slow: true, run: backup),
        "vacuum": Method(adminOnly: true, slow: true, run: vacuum),
    ]

    /// Methods that run a client's clause, on the daemon's query threads rather than the pool:
    /// they may run until the query time limit.
    public static let queryLane: Set<String> = ["index.query", "index.aggregate"]

    /// Maintenance runs: one at a time per daemon, the policy timer's included; a second is
    /// answered `busy` (that is how cron runs never overlap).
    public static let maintenance: Set<String> = [
        "policy.enforce", "policy.evict", "policy.expire", "verify", "backup", "vacuum",
    ]

    /// Why `caller` may not run `method` with `params`, checked before any work or claim:
    /// admin-only methods, and the admin-only forms of maintenance runs (real policy runs,
    /// verify with repair or delete_orphans). The method bodies check again.
    public static func refusal(_ method: String, _ params: JSONValue, _ caller: Caller) -> RPCError? {
        guard !caller.isAdmin else { return nil }
        let denied: String?
        switch method {
        case _ where methods[method]?.adminOnly == true: denied = method
        case _ where method.hasPrefix("policy.") && params["dry_run"] != true:
            denied = "\(method) without dry_run"
        case "verify" where params["repair"] == true: denied = "verify with repair"
        case "verify" where params["delete_orphans"] == true: denied = "verify with delete_orphans"
        default: denied = nil
        }
        return denied.map { .application(.permissionDenied, "\($0) is for admins only") }
    }

    /// Runs `method`, mapping every failure to a JSON-RPC error.
    public static func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) -> Result<MethodOutcome, RPCError> {
        guard let m = methods[method] else { return .failure(.methodNotFound(method)) }
        if m.adminOnly && !ctx.caller.isAdmin {
            return .failure(.application(.permissionDenied, "\(method) is for admins only"))
        }
        return capture { try m.run(Params(params), ctx) }
    }

    /// `body`'s value, or its error as the protocol reports it (the one place that maps).
    public static func capture<T>(_ body: () throws -> T) -> Result<T, RPCError> {
        do {
            return .success(try body())
        } catch let e as RPCError {
            return .failure(e)
        } catch let e as StoreError {
            return .failure(RPCError(e))
        } catch {
            return .failure(RPCError(code: RPCError.internalErrorCode, message: "internal error"))
        }
    }

    /// `{commit}`.
    static func committed(_ report: CommitReport) -> MethodOutcome {
        MethodOutcome(.object(["commit": .int(report.commit)]), commit: report)
    }

    /// With enforce_ownership, a non-admin may write only its own objects.
    static func checkOwner(_ ref: ObjectRef, _ tx: WriteTransaction, _ ctx: MethodContext) throws {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin, let existing = try tx.get(ref) else { return }
        guard existing.owner == ctx.caller.userName else {
            throw RPCError.application(
                .permissionDenied, "\(ref) belongs to \(existing.owner), not \(ctx.caller.userName)")
        }
    }

    /// Real runs that delete other users' objects, or touch the whole database, are for admins.
    static func requireAdmin(_ what: String, _ ctx: MethodContext) throws {
        guard ctx.caller.isAdmin else { throw RPCError.application(.permissionDenied, "\(what) is for admins only") }
    }

    /// With enforce_ownership, only admins change what affects every object.
    static func checkAdminIfEnforcing(_ what: String, _ ctx: MethodContext) throws {
        if ctx.enforceOwnership && !ctx.caller.isAdmin {
            throw RPCError.application(.permissionDenied, "\(what) is for admins while ownership is enforced")
        }
    }
}
