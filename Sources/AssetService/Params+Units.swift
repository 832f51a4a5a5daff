// Durations and sizes in params: strings as the config file writes them ("90s", "50GiB"), or
// plain numbers of seconds and bytes (assetd(8), CONTROL PROTOCOL, Methods; the string forms are
// those of assetd.toml(5), Values).

import AssetStore
import ControlProtocol

extension Params {
    /// An optional duration: "90s", "10m", "1h30m", or a number of seconds.
    public func optionalDuration(_ name: String) throws(RPCError) -> Double? {
        guard let v = value(name) else { return nil }
        if let d = v.stringValue.flatMap(Units.duration) ?? v.doubleValue, d >= 0, d.isFinite { return d }
        throw .invalidParams("\(name) must be a duration such as \"90s\" or \"10m\", or a number of seconds")
    }

    /// An optional size: "512MiB", "50GiB", or a number of bytes.
    public func optionalSize(_ name: String) throws(RPCError) -> Int64? {
        guard let v = value(name) else { return nil }
        if let n = v.intValue ?? v.stringValue.flatMap(Units.size), n >= 0 { return n }
        throw .invalidParams("\(name) must be a size such as \"512MiB\", or a number of bytes")
    }
}
