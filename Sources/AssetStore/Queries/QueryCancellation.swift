// Stops a client's query when the client is gone: its lane thread would otherwise run the
// clause to the time limit for no one (assetd(8), CONTROL PROTOCOL). Set from the loop thread,
// read by SQLite's progress handler on the query's thread.

import Synchronization

/// A flag the daemon raises when the connection that asked for a query closes.
public final class QueryCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Asks the running statement to stop at its next progress check.
    public func cancel() { flag.store(true, ordering: .relaxed) }

    /// True once `cancel()` was called.
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
