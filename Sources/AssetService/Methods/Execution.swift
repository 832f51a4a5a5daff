// How the daemon runs a method, declared with the method in MethodTable: the one place that
// decides which thread runs what. The session reads it; nothing else looks at method names.

/// Where and how the daemon runs a method (`assetctl --db` runs every method on its own
/// thread, in order).
public enum Execution: Sendable, Equatable {
    /// On the loop, between other clients' requests: the method does no database work, or
    /// answers from what the daemon holds in memory (ping's last commit). It stays fast while
    /// scans fill the threads.
    case loop
    /// On the loop, through the method's point-read body over a snapshot the daemon keeps for
    /// the rest of the loop turn (no thread hop), the stored value spliced into the reply. A
    /// touch is one too: the access is recorded in memory from the row read.
    case pointRead
    /// Queued for the next group commit (`PutPipeline`): the puts of many clients share one
    /// transaction and one sync, and each is answered once its commit is durable. A call
    /// counted against its caller's lease quota (`MethodTable.countsLeases`) runs on the pool.
    case groupCommit
    /// On the query threads, taken in turn by user: a client's clause may run until the
    /// query time limit without keeping writes, leases, stats or sweeps waiting.
    case queryLane
    /// On libuv's thread pool.
    case pool
    /// On the thread pool, holding the daemon's one maintenance slot (the policy timer's
    /// runs included): a second run is answered `busy`. A non-admin's read-only run holds a
    /// slot of its own, also one at a time.
    case maintenance
}
