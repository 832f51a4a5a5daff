// The idle query connections a store reuses (QueryConnection.swift), handed to one thread at
// a time.

import Synchronization

/// Idle query connections, reused; at most a few are kept.
final class QueryConnectionPool: Sendable {
    let path: String
    let timeLimit: Double
    let lengthLimit: Int
    let tempLimit: Int
    // QueryConnection is not Sendable; the mutex hands each to one thread at a time.
    private let idle = Mutex<[UnsafeSendable<QueryConnection>]>([])
    private let closed = Mutex(false)

    init(path: String, timeLimit: Double, lengthLimit: Int, tempLimit: Int) {
        self.path = path
        self.timeLimit = timeLimit
        self.lengthLimit = lengthLimit
        self.tempLimit = tempLimit
    }

    func with<T>(cancellation: QueryCancellation? = nil, _ body: (QueryConnection) throws -> T) throws -> T {
        guard !closed.withLock({ $0 }) else { throw StoreError(.internalError, "the store is closed") }
        let conn =
            try idle.withLock { $0.popLast()?.value }
            ?? QueryConnection(
                path: path, timeLimit: timeLimit, lengthLimit: lengthLimit, tempLimit: tempLimit, clientQueries: true)
        conn.cancellation = cancellation
        defer {
            conn.allowedTable = nil
            conn.cancellation = nil
            if !closed.withLock({ $0 }) {
                idle.withLock { if $0.count < 8 { $0.append(UnsafeSendable(conn)) } }
            }
        }
        return try body(conn)
    }

    /// The memory peaks of the last queries of the idle connections (tests read the one that
    /// ran a query, whichever it is).
    var idleMemoryPeaks: [Int] { idle.withLock { $0.map(\.value.memoryPeak) } }

    func close() {
        closed.withLock { $0 = true }
        idle.withLock { $0.removeAll() }
    }
}

/// Moves a non-Sendable value between threads where a lock guarantees one user at a time.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
