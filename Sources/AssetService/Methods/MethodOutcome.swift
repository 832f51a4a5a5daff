// What a method hands back besides its result: the commits and sweep it made (for events,
// ping's commit and unlinks) and what the session or daemon must do next.

import AssetStore
import ControlProtocol

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
        /// The result is the store's half of `stats`: the daemon adds its own figures
        /// (connections, requests, latency, buffers) on the loop before replying, so only the
        /// owners are rendered on the worker thread (`renderedMembers`). Nothing to add
        /// in-process.
        case addDaemonStats
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
    /// Members of the result (an object) already rendered as JSON text, written with the
    /// others in key order: `stats`'s owners, rendered on the worker thread so the loop,
    /// which adds the daemon's figures, only copies them.
    public var renderedMembers: [String: [UInt8]] = [:]
    /// A touch was recorded (in memory, no commit of its own): like a commit, the reply goes
    /// out whatever its size, since refusing it would tell the client nothing happened.
    public var recordedAccess = false

    public init(_ result: JSONValue, commit: CommitReport? = nil, sweep: SweepReport? = nil, action: Action = .none) {
        self.result = result
        self.commit = commit
        self.sweep = sweep
        self.action = action
    }

    /// Whether the reply is finished on the loop (the daemon adds to it), so not built on the
    /// worker thread.
    public var completedOnLoop: Bool {
        if case .addDaemonStats = action { return true }
        return false
    }

    /// Every commit the method made, in order.
    public var commits: [CommitReport] {
        // Most replies made no commit of their own (a put's is the batch's): no array to join.
        guard let commit else { return moreCommits }
        return [commit] + moreCommits
    }
}
