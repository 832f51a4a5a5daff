// The [control] keys of ControlLimits.

import AssetStore

extension ConfigParser {
    static let limitKeys: Set<String> = [
        "query_threads", "query_time_limit", "max_reply_bytes", "query_temp_bytes", "connection_input_bytes",
        "connection_output_bytes",
        "total_buffer_bytes", "admin_reserved_connections", "max_connections_per_uid", "max_watchers_per_uid",
        "max_lease_entries_per_connection", "total_lease_entries", "max_cascade_objects",
    ]

    func limits(_ control: JSONValue?, maxConnections: Int, into c: inout ControlLimits) throws(ConfigError) {
        guard let control else { return }
        func count(_ key: String, _ range: ClosedRange<Int64>) throws(ConfigError) -> Int? {
            guard let v = control[key] else { return nil }
            guard let n = v.intValue, range.contains(n) else {
                throw error(
                    "control.\(key)", "must be an integer from \(range.lowerBound) to \(range.upperBound)",
                    section: "control")
            }
            return Int(n)
        }
        func size(_ key: String) throws(ConfigError) -> Int? {
            guard let v = control[key] else { return nil }
            guard let n = v.intValue ?? v.stringValue.flatMap(Units.size), n >= 1024, n <= 1 << 40 else {
                throw error("control.\(key)", "must be a size from 1KiB to 1TiB, such as \"16MiB\"", section: "control")
            }
            return Int(n)
        }
        if let n = try count("query_threads", 1...256) { c.queryThreads = n }
        if let v = control["query_time_limit"] {
            let d = try duration(v, "control.query_time_limit", section: "control")
            guard d > 0 else { throw error("control.query_time_limit", "must be longer than 0s", section: "control") }
            c.queryTimeLimit = d
        }
        if let n = try size("max_reply_bytes") { c.maxReplyBytes = n }
        if let n = try size("query_temp_bytes") { c.queryTempBytes = n }
        if let n = try size("connection_input_bytes") { c.connectionInputBytes = n }
        if let n = try size("connection_output_bytes") { c.connectionOutputBytes = n }
        if let n = try size("total_buffer_bytes") { c.totalBufferBytes = n }
        if let n = try count("admin_reserved_connections", 0...1_000_000) { c.adminReservedConnections = n }
        // The default gives way to a small max_connections; a value set must fit.
        guard control["admin_reserved_connections"] == nil || c.adminReservedConnections < maxConnections else {
            throw error(
                "control.admin_reserved_connections", "must be less than control.max_connections (\(maxConnections))",
                section: "control")
        }
        if let n = try count("max_connections_per_uid", 1...1_000_000) { c.maxConnectionsPerUID = n }
        if let n = try count("max_watchers_per_uid", 1...1_000_000) { c.maxWatchersPerUID = n }
        if let n = try count("max_cascade_objects", 0...1_000_000_000) { c.maxCascadeObjects = n }
        let perConnection = try count("max_lease_entries_per_connection", 1...100_000_000)
        let total = try count("total_lease_entries", 1...1_000_000_000)
        if let n = perConnection { c.maxLeaseEntriesPerConnection = n }
        if let n = total { c.totalLeaseEntries = n }
        // A connection could never reach its own bound otherwise. A default gives way to the
        // value set (as for admin_reserved_connections); two values set must fit.
        if c.maxLeaseEntriesPerConnection > c.totalLeaseEntries {
            if perConnection == nil {
                c.maxLeaseEntriesPerConnection = c.totalLeaseEntries
            } else if total == nil {
                c.totalLeaseEntries = c.maxLeaseEntriesPerConnection
            } else {
                throw error(
                    "control.total_lease_entries",
                    "control.max_lease_entries_per_connection (\(c.maxLeaseEntriesPerConnection)) must be at most "
                        + "control.total_lease_entries (\(c.totalLeaseEntries))", section: "control")
            }
        }
    }
}
