// What `stats` adds to the store's figures: the daemon's uptime, connections, requests,
// query lane, clients' pool jobs, connection buffers and request latency. Loop-bound.

import AssetStore
import JSON

extension ControlServer {
    /// The store's stats plus the daemon's: uptime, connections, requests, latency.
    func augmentStats(_ value: JSONValue) -> JSONValue {
        var o = value.objectValue ?? [:]
        let n = min(latencyCount, latencies.count)
        let sorted = latencies.prefix(n).sorted()
        func percentile(_ p: Double) -> JSONValue {
            n == 0 ? .null : .double((sorted[min(n - 1, Int(Double(n) * p))] * 1e6).rounded() / 1e3)
        }
        o["uptime"] = .double((QueryClock.now() - daemon.started).rounded())
        o["connections"] = .int(Int64(sessions.count))
        o["closing_connections"] = .int(Int64(closingConnections))
        o["requests"] = .int(Int64(requests))
        if let queries {
            let load = queries.load
            o["queries"] = .object([
                "threads": .int(Int64(queries.threads)), "running": .int(Int64(load.running)),
                "queued": .int(Int64(load.queued)),
            ])
        }
        let pool = daemon.pool
        o["pool"] = .object([
            "threads": .int(Int64(pool.threads)), "running": .int(Int64(pool.clientsRunning)),
            "queued": .int(Int64(pool.queued)),
        ])
        var input = 0, output = closing.bytes + eventBytes
        for s in sessions.values {
            input += s.bufferedBytes - s.outputBytes
            output += s.outputBytes
        }
        o["buffers"] = .object([
            "input_bytes": .int(Int64(input)), "output_bytes": .int(Int64(output)),
            "paused_connections": .int(Int64(sessions.values.filter(\.readingPaused).count)),
            "dropped_connections": .int(Int64(droppedConnections)), "peak_bytes": .int(Int64(peakTotal)),
        ])
        o["latency_ms"] = .object(["p50": percentile(0.5), "p99": percentile(0.99), "samples": .int(Int64(n))])
        #if DEBUG
        if DebugStats.shown {
            o["debug"] = .object([
                "edge_rows_read": .int(Int64(EdgeRowsRead.value)),
                "event_lines_rendered": .int(Int64(DebugStats.eventLinesRendered)),
                "identity_lookups": .int(Int64(DebugStats.identityLookups)),
                "leases_draining": .int(Int64(leasedTurns.draining)),
                "turns_waiting": .int(Int64(leasedTurns.waitingCount)),
                "parsed_requests_waiting": .int(Int64(sessions.values.reduce(0) { $0 + $1.parsedWaiting })),
                "parses_waiting": .int(Int64(parseGate.waitingCount)),
                "parses_running": .int(Int64(parseGate.running)),
                "read_only_maintenance": daemon.maintenance.readOnlyRunning.isEmpty
                    ? .null : .int(Int64(daemon.maintenance.readOnlyRunning.count)),
                "users": .int(Int64(users.count)),
                "puts_waiting": .int(Int64(puts?.waitingCount ?? 0)),
            ])
        }
        #endif
        return .object(o)
    }
}
