// What one client may take of the daemon (assetd.toml(5), [control]): threads for queries,
// bytes buffered per connection and in total, the size of one reply, connection slots,
// watchers, what leases hold, objects one request's rules may delete.

import AssetStore
import Foundation

/// The `control.*` limits that keep one client from hurting the others.
public struct ControlLimits: Sendable, Equatable {
    /// `control.query_threads`: threads that run index.query and index.aggregate.
    public var queryThreads = 2
    /// `control.query_time_limit`, seconds: a clause running longer is interrupted.
    public var queryTimeLimit = 30.0
    /// `control.max_reply_bytes`: a larger reply is refused with reply_too_large.
    public var maxReplyBytes = 16 << 20
    /// `control.query_temp_bytes`: temporary files one index.query or index.aggregate may hold
    /// (a sort or group that outgrows memory); past it the query is stopped.
    public var queryTempBytes = 256 << 20
    /// `control.connection_input_bytes`: requests read and not yet run, per connection.
    public var connectionInputBytes = 8 << 20
    /// `control.connection_output_bytes`: replies not yet taken by the client, per connection.
    public var connectionOutputBytes = 4 << 20
    /// `control.total_buffer_bytes`: input and output of all connections together.
    public var totalBufferBytes = 128 << 20
    /// `control.admin_reserved_connections`: slots of max_connections only admins may take.
    public var adminReservedConnections = 8
    /// `control.max_connections_per_uid`: connections one non-admin uid may hold.
    public var maxConnectionsPerUID = 256
    /// `control.max_watchers_per_uid`: watching connections one non-admin uid may hold. Each
    /// costs every commit a copy of its events on the loop.
    public var maxWatchersPerUID = 16
    /// `control.max_lease_entries_per_connection`: objects and files one connection's live leases hold.
    public var maxLeaseEntriesPerConnection = 4096
    /// `control.total_lease_entries`: objects and files the live leases of all connections hold.
    public var totalLeaseEntries = 65_536
    /// `control.max_cascade_objects`: objects the rules may delete for one non-admin request;
    /// 0 for no bound. 10,000 is at least 0.2 s of every writer's time a refusal (DESIGN.md).
    public var maxCascadeObjects = 10_000

    /// The bound on a non-admin's cascade, nil for none.
    public var cascadeLimit: Int? { maxCascadeObjects == 0 ? nil : maxCascadeObjects }

    /// The lease bounds of these limits.
    public var leaseBounds: LeaseBounds {
        LeaseBounds(perHolder: maxLeaseEntriesPerConnection, total: totalLeaseEntries)
    }

    public init() {}

    /// `key = value` lines for the start-up log.
    var summary: [String] {
        [
            "control.query_threads = \(queryThreads)",
            "control.query_time_limit = \(Units.formatDuration(queryTimeLimit))",
            "control.max_reply_bytes = \(maxReplyBytes)",
            "control.query_temp_bytes = \(queryTempBytes)",
            "control.connection_input_bytes = \(connectionInputBytes)",
            "control.connection_output_bytes = \(connectionOutputBytes)",
            "control.total_buffer_bytes = \(totalBufferBytes)",
            "control.admin_reserved_connections = \(adminReservedConnections)",
            "control.max_connections_per_uid = \(maxConnectionsPerUID)",
            "control.max_watchers_per_uid = \(maxWatchersPerUID)",
            "control.max_lease_entries_per_connection = \(maxLeaseEntriesPerConnection)",
            "control.total_lease_entries = \(totalLeaseEntries)",
            "control.max_cascade_objects = \(maxCascadeObjects)",
        ]
    }
}

extension DaemonConfig {
    /// Settings that are legal and dangerous together: a socket every local user may open,
    /// with ownership not enforced, lets each of them have assetd (root, as a rule) unlink any
    /// file under the roots, in folders they could not open themselves.
    public var accessWarnings: [String] {
        guard socketMode & 0o002 != 0, !enforceOwnership else { return [] }
        return [
            "control.mode \(String(format: "%04o", socketMode)) lets every local user open the socket, and with"
                + " control.enforce_ownership = false each may have assetd unlink any file under the roots, other"
                + " users' too: set enforce_ownership = true, or a mode without access for others"
        ]
    }

    /// Limits that contradict each other without being wrong: a request line is counted with
    /// 128 bytes for its bookkeeping, and refused once it or what it holds parsed passes
    /// connection_input_bytes, so max_request_bytes over that less 128 is never reached.
    public var limitWarnings: [String] {
        guard maxRequestBytes + 128 > limits.connectionInputBytes else { return [] }
        return [
            "control.max_request_bytes (\(maxRequestBytes)) plus 128 passes control.connection_input_bytes "
                + "(\(limits.connectionInputBytes)): longer requests are refused with request_too_large"
        ]
    }
}
