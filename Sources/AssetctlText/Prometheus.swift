// `stats` in the Prometheus text exposition format (version 0.0.4), for node_exporter's
// textfile collector: `# HELP` and `# TYPE` once per metric family, names `assetd_…`, label
// values escaped (backslash, double quote, newline), one sample per line.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JSON

/// Renders `stats` results as Prometheus metrics.
public enum Prometheus {
    /// One metric family.
    struct Family {
        var name: String
        var type: String
        var help: String
        var samples: [(labels: [(String, String)], value: Double)]
    }

    /// The exposition text of a `stats` result.
    public static func exposition(stats s: JSONValue) -> String {
        var families = [Family]()
        func gauge(_ name: String, _ help: String, _ value: JSONValue?, type: String = "gauge") {
            guard let v = value?.doubleValue else { return }
            families.append(Family(name: name, type: type, help: help, samples: [([], v)]))
        }
        gauge("assetd_objects", "Objects in the store.", s["objects"])
        gauge("assetd_files", "Registered files.", s["files"])
        gauge("assetd_bytes", "Bytes of all registered files, each counted once.", s["bytes"])
        if let samples = ownerSamples(s) {
            families.append(
                Family(
                    name: "assetd_owner_bytes", type: "gauge", help: "Bytes of the files each owner's objects hold.",
                    samples: samples))
        }
        if s["owners"] != nil {
            gauge(
                "assetd_owners_omitted", "Owners left out of assetd_owner_bytes to fit control.max_reply_bytes.",
                s["owners_omitted"] ?? .int(0))
        }
        gauge("assetd_pending_unlinks", "Queued unlinks.", s["pending_unlinks"])
        gauge("assetd_failed_unlinks", "Queued unlinks that failed at least once.", s["failed_unlinks"])
        if let counters = s["counters"]?.objectValue {
            families += counterFamilies(counters)
        }
        gauge("assetd_last_commit", "The number of the latest commit.", s["commit"])
        gauge(
            "assetd_wal_frames", "Pages in the write-ahead log after the daemon's latest commit.", s["wal"]?["frames"])
        gauge(
            "assetd_checkpoints_total", "Background checkpoints run since the daemon started.",
            s["wal"]?["checkpoints"], type: "counter")
        gauge(
            "assetd_checkpoint_failures_total", "Checkpoints that failed since the daemon started.",
            s["wal"]?["checkpoint_failures"], type: "counter")
        if let wal = s["wal"] {
            gauge(
                "assetd_writes_refused",
                "1 once a sync of the database failed: writes are refused until assetd is restarted.",
                .int(wal["sync_failure"] == nil ? 0 : 1))
        }
        gauge("assetd_uptime_seconds", "Seconds since the daemon started.", s["uptime"])
        gauge("assetd_connections", "Open control connections.", s["connections"])
        gauge("assetd_requests_total", "Requests answered since the daemon started.", s["requests"], type: "counter")
        if let latency = s["latency_ms"] {
            let samples: [(labels: [(String, String)], value: Double)] = [("0.5", "p50"), ("0.99", "p99")].compactMap {
                q, key in
                latency[key]?.doubleValue.map { ([("quantile", q)], $0 / 1000) }
            }
            if !samples.isEmpty {
                families.append(
                    Family(
                        name: "assetd_request_latency_seconds", type: "gauge",
                        help: "Request latency over the last requests, by quantile.", samples: samples))
            }
        }
        return families.filter { !$0.samples.isEmpty }.map(render).joined()
    }

    /// A sample per owner: from `owners`, where each owner is apart (labels are compared as
    /// bytes, so `café` and `cafe` + U+0301 are two series), else from `bytes_per_owner`
    /// (an older daemon's, where such owners were one entry).
    static func ownerSamples(_ s: JSONValue) -> [(labels: [(String, String)], value: Double)]? {
        if let owners = s["owners"]?.arrayValue {
            return owners.compactMap { o in
                guard let name = o["owner"]?.stringValue, let bytes = o["bytes"]?.doubleValue else { return nil }
                return ([("owner", name)], bytes)
            }
        }
        guard let owners = s["bytes_per_owner"]?.objectValue else { return nil }
        return owners.keys.sorted().compactMap { k in owners[k]?.doubleValue.map { ([("owner", k)], $0) } }
    }

    /// The lifetime counters: policy deletions by reason, bytes policies freed, and unlink
    /// outcomes (unlinked, skipped, failed, deferred) by name.
    static func counterFamilies(_ counters: [String: JSONValue]) -> [Family] {
        var byReason = [(labels: [(String, String)], value: Double)]()
        var outcomes = [(labels: [(String, String)], value: Double)]()
        var families = [Family]()
        for key in counters.keys.sorted() {
            guard let v = counters[key]?.doubleValue else { continue }
            switch key {
            case "policy_deleted":
                families.append(
                    Family(
                        name: "assetd_policy_deleted_total", type: "counter",
                        help: "Objects lifecycle policies deleted.",
                        samples: [([], v)]))
            case "policy_bytes":
                families.append(
                    Family(
                        name: "assetd_policy_freed_bytes_total", type: "counter",
                        help: "Bytes of the files lifecycle policies queued for unlinking.", samples: [([], v)]))
            case let k where k.hasPrefix("policy_deleted_"):
                byReason.append(([("reason", String(k.dropFirst("policy_deleted_".count)))], v))
            default:
                outcomes.append(([("outcome", key)], v))
            }
        }
        families.append(
            Family(
                name: "assetd_policy_deleted_by_reason_total", type: "counter",
                help: "Objects lifecycle policies deleted, by reason.", samples: byReason))
        families.append(
            Family(
                name: "assetd_unlink_outcomes_total", type: "counter",
                help: "Unlink outcomes since the database was created.",
                samples: outcomes))
        return families
    }

    static func render(_ f: Family) -> String {
        var out = "# HELP \(f.name) \(escapeHelp(f.help))\n# TYPE \(f.name) \(f.type)\n"
        for sample in f.samples {
            out += f.name
            if !sample.labels.isEmpty {
                out += "{" + sample.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
            }
            out += " " + number(sample.value) + "\n"
        }
        return out
    }

    /// A label value with `\`, `"` and newlines escaped. By scalar, not Character: Swift
    /// reads "\r\n" as one Character, whose newline would otherwise pass raw.
    public static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// HELP text with `\` and newlines escaped (by scalar, as label values).
    static func escapeHelp(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Integers without a fraction; others to 15 significant digits, the most a double holds
    /// for every decimal, so a quotient such as 1.087 / 1000 prints `0.001087`, not the
    /// `0.0010869999999999999` of its shortest round trip (Go's ParseFloat reads both forms).
    static func number(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d > 0 ? "+Inf" : "-Inf" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        var buffer = [CChar](repeating: 0, count: 32)
        let count = buffer.count
        // %.15g of a finite double is at most 22 characters ("-1.23456789012345e-308").
        _ = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([d]) { list in vsnprintf(out.baseAddress, count, "%.15g", list) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
