// The control protocol's methods as plain functions over a Store, with no event loop, each
// declared with how the daemon runs it (Execution.swift): the daemon runs them on its loop,
// its pools and lanes as declared, and `assetctl --db` runs them in-process. Each method
// lives in its own file as an extension of MethodTable.

import AssetStore
import ControlProtocol
import Foundation

/// Every method of the control protocol (assetd(8), CONTROL PROTOCOL), with how each runs.
public enum MethodTable {
    /// One method: who may call it, how the daemon runs it, and its body.
    public struct Method: Sendable {
        /// Only admins may call it.
        public let adminOnly: Bool
        /// Means something only to a running daemon (watching, stopping it): `assetctl --db`
        /// refuses it.
        public let needsDaemon: Bool
        /// How the daemon runs it: one way whatever the params, so the daemon decides before
        /// reading them (a point read takes its params without a dictionary).
        public let execution: Execution
        /// How it stands to its caller's lease quota: a call `countsLeases` picks runs on the
        /// pool, one of its uid's at a time, whatever `execution` says (LeasedWrites.swift).
        public let leaseCounting: LeaseCounting
        /// The admin-only form of a method anyone may call, judged by its params before any
        /// work or claim (a real policy run, verify with repair): its name in the refusal.
        fileprivate let adminForm: (@Sendable (JSONValue) -> String?)?
        /// The body.
        fileprivate let run: @Sendable (Params, MethodContext) throws -> MethodOutcome
        /// For a point read: the body over point reads the caller keeps, appending the result's
        /// JSON text (the context is made only if the body asks). `run` renders through it
        /// too, so both answer the same bytes.
        private let read: (@Sendable (Params, any PointReads, () -> MethodContext, inout [UInt8]) throws -> Void)?

        init(
            _ execution: Execution, adminOnly: Bool = false, needsDaemon: Bool = false,
            adminForm: (@Sendable (JSONValue) -> String?)? = nil,
            leaseCounting: LeaseCounting = .none,
            run: @escaping @Sendable (Params, MethodContext) throws -> MethodOutcome
        ) {
            self.execution = execution
            self.leaseCounting = leaseCounting
            self.adminOnly = adminOnly
            self.needsDaemon = needsDaemon
            self.adminForm = adminForm
            self.run = run
            read = nil
        }

        /// A point read with its body over point reads.
        init(
            pointRead read:
                @escaping @Sendable (Params, any PointReads, () -> MethodContext, inout [UInt8]) throws ->
                Void,
            run: @escaping @Sendable (Params, MethodContext) throws -> MethodOutcome
        ) {
            execution = .pointRead
            leaseCounting = .none
            adminOnly = false
            needsDaemon = false
            adminForm = nil
            self.run = run
            self.read = read
        }

        /// Appends a `.pointRead` call's result as JSON text to `out`, read through `reader` on
        /// the daemon's loop (the reply line: no copy of the result), or says why not: its error
        /// as the protocol reports it, or that it is to run off the loop (an object with many
        /// file edges; nothing was recorded); then `out` may hold part of the text. `context`
        /// is asked only by a call that records an access.
        public func pointRead(
            _ params: Params, from reader: any PointReads, into out: inout [UInt8], context: () -> MethodContext
        ) -> PointReadAnswer {
            guard let read else {
                return .failed(RPCError(code: RPCError.internalErrorCode, message: "not a point read"))
            }
            do {
                try read(params, reader, context, &out)
                return .written
            } catch is PointReadOffLoop {
                return .offLoop
            } catch {
                if case .failure(let e) = capture({ throw error }) { return .failed(e) }
                return .written
            }
        }
    }

    /// How a point read on the loop ended.
    public enum PointReadAnswer {
        /// The result is written.
        case written
        /// Refused: the error to answer.
        case failed(RPCError)
        /// Not read on the loop (docs/PROTOCOL.md, object.get): run the method on the pool.
        case offLoop
    }

    /// The methods by name.
    public static let methods: [String: Method] = [
        "ping": Method(.loop, run: ping),
        "object.put": Method(.groupCommit, leaseCounting: .write, run: objectPut),
        // Point reads on the loop, touching ones too: an access is recorded in memory.
        "object.get": Method(pointRead: objectGetRead, run: objectGet),
        "object.delete": Method(.pool, run: objectDelete),
        "object.touch": Method(pointRead: objectTouchRead, run: objectTouch),
        "object.list": Method(.pool, run: objectList),
        "edge.add": Method(.pool, leaseCounting: .write, run: edgeAdd),
        "edge.remove": Method(.pool, run: edgeRemove),
        "edge.find": Method(.pool, run: edgeFind),
        "edge.count": Method(.pool, run: edgeCount),
        "transact": Method(.pool, leaseCounting: .write, run: transact),
        "template.set": Method(.pool, run: templateSet),
        "template.get": Method(.pool, run: templateGet),
        "index.define": Method(.pool, run: indexDefine),
        "index.list": Method(.pool, run: indexList),
        "index.query": Method(.queryLane, run: indexQuery),
        "index.aggregate": Method(.queryLane, run: indexAggregate),
        "file.get": Method(.pool, run: fileGet),
        "watch": Method(.loop, needsDaemon: true, run: watch),
        "unwatch": Method(.loop, needsDaemon: true, run: unwatch),
        "stats": Method(.pool, run: stats),
        "sweep": Method(.pool, adminForm: sweepRelease, run: sweep),
        "pending": Method(.pool, run: pending),
        "pending.forget": Method(.pool, adminOnly: true, run: pendingForget),
        "shutdown": Method(.loop, adminOnly: true, needsDaemon: true, run: shutdown),
        // On the pool: every lease waits for a policy batch under way to commit. A lease
        // granted after its connection closed is ended when the reply would go (Session).
        "lease.acquire": Method(.pool, leaseCounting: .lease, run: leaseAcquire),
        "lease.release": Method(.pool, run: leaseRelease),
        // On the pool: a page may walk every lease (the ownership filter refusing most of them).
        "lease.list": Method(.pool, run: leaseList),
        "object.pin": Method(.pool, run: objectPin),
        "object.unpin": Method(.pool, run: objectUnpin),
        "checkpoint": Method(.pool, adminOnly: true, run: checkpoint),
        // Maintenance runs: one at a time per daemon (that is how cron runs never overlap).
        "policy.enforce": Method(.maintenance, adminForm: realPolicyRun("policy.enforce"), run: policyEnforce),
        "policy.evict": Method(.maintenance, adminForm: realPolicyRun("policy.evict"), run: policyEvict),
        "policy.expire": Method(.maintenance, adminForm: realPolicyRun("policy.expire"), run: policyExpire),
        "verify": Method(.maintenance, adminForm: verifyChanges, run: verify),
        "backup": Method(.maintenance, adminOnly: true, run: backup),
        "vacuum": Method(.maintenance, adminOnly: true, run: vacuum),
    ]

    /// Why `caller` may not run `method` with `params`, checked before any work or claim:
    /// admin-only methods, and the admin-only forms of methods anyone may call. The method
    /// bodies check again.
    public static func refusal(_ method: String, _ params: JSONValue, _ caller: Caller) -> RPCError? {
        guard !caller.isAdmin, let m = methods[method] else { return nil }
        guard let denied = m.adminOnly ? method : m.adminForm?(params) else { return nil }
        return .application(.permissionDenied, "\(denied) is for admins only")
    }

    /// Runs `method`, mapping every failure to a JSON-RPC error.
    public static func call(
        _ method: String, _ params: JSONValue, _ ctx: MethodContext
    ) -> Result<MethodOutcome, RPCError> {
        guard let m = methods[method] else { return .failure(.methodNotFound(method)) }
        return call(m, method, Params(params), ctx)
    }

    /// Runs `method` with `params` read from a request's members (a point read run off the loop).
    public static func call(_ method: String, _ params: Params, _ ctx: MethodContext) -> Result<MethodOutcome, RPCError>
    {
        guard let m = methods[method] else { return .failure(.methodNotFound(method)) }
        return call(m, method, params, ctx)
    }

    private static func call(
        _ m: Method, _ method: String, _ params: Params, _ ctx: MethodContext
    ) -> Result<MethodOutcome, RPCError> {
        if m.adminOnly && !ctx.caller.isAdmin {
            return .failure(.application(.permissionDenied, "\(method) is for admins only"))
        }
        return capture { try m.run(params, ctx) }
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
}
