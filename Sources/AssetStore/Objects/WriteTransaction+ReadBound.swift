// The bound on what a bounded request's reads and flushes may make the writer do (a
// non-admin's `transact`, whose ops run in the write transaction and so hold every other
// writer): the cascade bound's allowance in edges, at `stepsPerEdge` SQLite steps each,
// counted by a progress handler across the request's bounded ops. A count, not a clock: the same request is
// refused on any machine, and a scan is stopped inside its statement, not after it.

import GRDB
import GRDBSQLite

/// What the bounded reads of one transaction may still spend, in handler calls.
final class ReadAllowance {
    var left: Int
    let initial: Int
    init(_ calls: Int) { (left, initial) = (calls, calls) }
}

private let readProgress: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ctx in
    // ctx is the transaction's ReadAllowance, alive while the handler is installed.
    let allowance = Unmanaged<ReadAllowance>.fromOpaque(ctx!).takeUnretainedValue()
    allowance.left -= 1
    return allowance.left < 0 ? 1 : 0
}

extension WriteTransaction {
    /// SQLite virtual-machine steps between two handler calls. SQLite counts them per
    /// statement, so a statement shorter than this is charged nothing: each bounded op is
    /// charged one call as it starts, and the calls are short.
    static let stepsPerCall: Int32 = 100
    /// Steps allowed a read for each edge the cascade bound allows: reading one edge with the
    /// names of its ends (`edge.find`) took 38-52, counting one 3-4.
    static let stepsPerEdge = 100

    /// Handler calls a transaction bounded at `limit` objects may spend on reads.
    public static func readCalls(_ limit: Int) -> Int {
        let (objects, past) = limit.addingReportingOverflow(1)
        let (edges, over) = objects.multipliedReportingOverflow(by: edgesPerCascadedObject)
        let (steps, over2) = edges.multipliedReportingOverflow(by: stepsPerEdge)
        return past || over || over2 ? .max : max(steps / Int(stepsPerCall), 1)
    }

    /// Runs `body`, a read of a request bounded at `limit` objects (nil: not bounded), within
    /// what the transaction's bounded reads have left; past it the read is interrupted and
    /// `query_rejected` thrown, so the request rolls back.
    public func boundedRead<T>(_ limit: Int?, _ body: () throws -> T) throws -> T {
        guard let limit else { return try body() }
        let allowance = allowance(limit)
        allowance.left -= 1
        if allowance.left < 0 { throw Self.readLimit(limit) }
        let handle = db.sqliteConnection
        sqlite3_progress_handler(
            handle, Self.stepsPerCall, readProgress, Unmanaged.passUnretained(allowance).toOpaque())
        // Nothing else installs one on the writer: none to restore.
        defer { sqlite3_progress_handler(handle, 0, nil, nil) }
        do {
            let value = try body()
            if allowance.left < 0 { throw Self.readLimit(limit) }
            return value
        } catch {
            if allowance.left < 0 { throw Self.readLimit(limit) }
            throw error
        }
    }

    /// Starts the next request of a transaction that serves several (a group commit), bounded
    /// at `bound` objects (nil: an admin's, not bounded): it gets an allowance of its own, so
    /// no caller's reads are refused for what another's spent.
    public func beginRequest(bound: Int?) {
        readAllowance = nil
        requestBound = .some(bound)
    }

    /// What the running request of a batch (since `beginRequest(bound:)`) has spent of its
    /// allowance, in calls (0 for an admin's, not counted): the group commit adds it to its
    /// uid's share of the batch (docs/DESIGN.md, the group commit's shares).
    public var requestReadCalls: Int { readAllowance.map { $0.initial - $0.left } ?? 0 }

    /// The allowance of this transaction's bounded request, bounded at `limit` objects: made
    /// at its first use.
    func allowance(_ limit: Int) -> ReadAllowance {
        if let readAllowance { return readAllowance }
        let made = ReadAllowance(Self.readCalls(limit))
        readAllowance = made
        return made
    }

    static func readLimit(_ limit: Int) -> StoreError {
        StoreError(
            .queryRejected,
            "the reads and flushes of this transact would hold the writer longer than control.max_cascade_objects = "
                + "\(limit) allows (about the work of reading \(edgesPerCascadedObject) edges for each object): "
                + "nothing was changed; read outside transact, on a snapshot, or do less at once",
            detail: ["limit": "control.max_cascade_objects", "value": .int(Int64(limit))])
    }
}
