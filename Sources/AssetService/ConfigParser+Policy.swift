// `[policy]` with its `[[policy.quota]]` and `[[policy.ttl]]` tables (assetd.toml(5), [policy]),
// read as strictly as the rest of the file: unknown keys, bad values, out-of-range numbers and
// duplicate owners or collections are errors naming the file, line and key.

import AssetStore
import Foundation

extension ConfigParser {
    static let policyKeys: Set<String> = [
        "interval", "max_bytes", "low_water", "min_free", "min_age", "batch", "quota", "ttl",
        "order",
    ]

    /// A value refused as a slip (a budget, quota or TTL of 0): thrown, or with
    /// `deferPolicyRefusals` added to `refused` and left out of the policy.
    private func refuse(_ e: ConfigError, _ refused: inout [ConfigError]) throws(ConfigError) {
        guard deferPolicyRefusals else { throw e }
        refused.append(e)
    }

    /// `[policy]` as the engine's settings, without the values in `refused`.
    func policy(_ value: JSONValue, refused: inout [ConfigError]) throws(ConfigError) -> PolicyConfiguration {
        guard let o = value.objectValue else { throw error("policy", "must be a table ([policy])") }
        for key in o.keys.sorted() where !ConfigParser.policyKeys.contains(key) {
            throw error("policy.\(key)", "unknown key", section: "policy")
        }
        var p = PolicyConfiguration()
        if let v = o["interval"] {
            p.interval = try duration(v, "policy.interval", section: "policy")
            // A year at most: the timer counts milliseconds in 64 bits and traps past that.
            guard p.interval >= 1, p.interval <= 366 * 86_400 else {
                throw error("policy.interval", "must be from 1s to 366d", section: "policy")
            }
        }
        if let v = o["max_bytes"] {
            p.maxBytes = try size(v, "policy.max_bytes", section: "policy")
            // A budget of 0 can only be a slip, and would empty the cache at every run.
            if p.maxBytes == 0 {
                p.maxBytes = nil
                try refuse(
                    error(
                        "policy.max_bytes",
                        "must be more than 0: remove max_bytes for no budget (a budget of 0 bytes evicts every"
                            + " object that holds a file at every run); to empty the cache once on purpose, run"
                            + " `assetctl expire --older-than 0s`", section: "policy"), &refused)
            }
        }
        if let v = o["low_water"] { p.lowWater = try lowWater(v) }
        if let v = o["min_free"] { p.minFree = try size(v, "policy.min_free", section: "policy") }
        if let v = o["min_age"] { p.minAge = try duration(v, "policy.min_age", section: "policy") }
        if let v = o["batch"] {
            guard case .int(let n) = v, (1...100_000).contains(n) else {
                throw error("policy.batch", "must be an integer from 1 to 100000", section: "policy")
            }
            p.batch = Int(n)
        }
        if let v = o["order"] {
            guard let name = v.stringValue, let order = EvictionOrder(rawValue: name) else {
                throw error("policy.order", "must be \"lru\", \"s3fifo\" or \"sieve\"", section: "policy")
            }
            p.order = order
        }
        if let v = o["quota"] { p.quotas = try quotas(v, refused: &refused) }
        if let v = o["ttl"] { p.ttls = try ttls(v, refused: &refused) }
        return p
    }

    /// "90%" or a fraction such as 0.9: a share of the budget in (0, 1].
    private func lowWater(_ v: JSONValue) throws(ConfigError) -> Double {
        var share: Double?
        if let s = v.stringValue {
            let t = s.trimmingCharacters(in: " ")
            share = t.hasSuffix("%") ? Double(t.dropLast()).map { $0 / 100 } : Double(t)
        } else if let d = v.doubleValue {
            share = d
        }
        guard let share, share > 0, share <= 1 else {
            throw error(
                "policy.low_water", "must be a share of the budget in (0, 100%], such as \"90%\" or 0.9",
                section: "policy")
        }
        return share
    }

    private func quotas(
        _ value: JSONValue, refused: inout [ConfigError]
    ) throws(ConfigError) -> [PolicyConfiguration.Quota] {
        guard let items = value.arrayValue else {
            throw error("policy.quota", "must be an array of tables ([[policy.quota]])", section: "policy")
        }
        var out = [PolicyConfiguration.Quota]()
        for (n, item) in items.enumerated() {
            let s = "policy.quota"
            guard let o = item.objectValue else { throw error(s, "must be a table", section: s, occurrence: n) }
            for key in o.keys.sorted() where key != "owner" && key != "max_bytes" {
                throw error("\(s).\(key)", "unknown key", section: s, occurrence: n)
            }
            guard let owner = o["owner"]?.stringValue, !owner.isEmpty else {
                throw error("\(s).owner", "each [[policy.quota]] needs an owner", section: s, occurrence: n)
            }
            guard let max = o["max_bytes"] else {
                throw error("\(s).max_bytes", "each [[policy.quota]] needs max_bytes", section: s, occurrence: n)
            }
            // Two owners whose names differ only in their bytes are two owners, as in the database.
            guard !out.contains(where: { OwnerName.same($0.owner, owner) }) else {
                throw error("\(s).owner", "owner \"\(owner)\" has two quotas", section: s, occurrence: n)
            }
            let bytes = try size(max, "\(s).max_bytes", section: s, occurrence: n)
            guard bytes > 0 else {
                try refuse(
                    error(
                        "\(s).max_bytes",
                        "must be more than 0: remove this [[policy.quota]] for no quota (a quota of 0 bytes evicts"
                            + " every object of \"\(owner)\" that holds a file at every run); to evict them once on"
                            + " purpose, run `assetctl evict --owner \(owner)`", section: s, occurrence: n), &refused)
                continue
            }
            out.append(.init(owner: owner, maxBytes: bytes))
        }
        return out
    }

    private func ttls(_ value: JSONValue, refused: inout [ConfigError]) throws(ConfigError) -> [PolicyConfiguration.TTL]
    {
        guard let items = value.arrayValue else {
            throw error("policy.ttl", "must be an array of tables ([[policy.ttl]])", section: "policy")
        }
        var out = [PolicyConfiguration.TTL]()
        for (n, item) in items.enumerated() {
            let s = "policy.ttl"
            guard let o = item.objectValue else { throw error(s, "must be a table", section: s, occurrence: n) }
            for key in o.keys.sorted() where !["collection", "max_idle", "max_age"].contains(key) {
                throw error("\(s).\(key)", "unknown key", section: s, occurrence: n)
            }
            guard let collection = o["collection"]?.stringValue, !collection.isEmpty else {
                throw error("\(s).collection", "each [[policy.ttl]] needs a collection", section: s, occurrence: n)
            }
            // Two collections whose names differ only in their bytes are two, as in the database.
            guard !out.contains(where: { UTF8Key($0.collection) == UTF8Key(collection) }) else {
                throw error("\(s).collection", "collection \"\(collection)\" has two TTLs", section: s, occurrence: n)
            }
            var ttl = PolicyConfiguration.TTL(collection: collection)
            if let v = o["max_idle"] { ttl.maxIdle = try duration(v, "\(s).max_idle", section: s, occurrence: n) }
            if let v = o["max_age"] { ttl.maxAge = try duration(v, "\(s).max_age", section: s, occurrence: n) }
            guard ttl.maxIdle != nil || ttl.maxAge != nil else {
                throw error("\(s).max_idle", "each [[policy.ttl]] needs max_idle or max_age", section: s, occurrence: n)
            }
            // A TTL of 0s expires the whole collection at every run (min_age aside).
            let zero = [("max_idle", ttl.maxIdle), ("max_age", ttl.maxAge)].first { $0.1 == 0 }?.0
            if let key = zero {
                try refuse(
                    error(
                        "\(s).\(key)",
                        "must be longer than 0s: remove \(key) to never expire by"
                            + " \(key == "max_idle" ? "idle time" : "age") (this [[policy.ttl]] if it has no"
                            + " \(key == "max_idle" ? "max_age" : "max_idle"); a TTL of 0s expires every object of"
                            + " \"\(collection)\" at every run); to expire them once on purpose, run"
                            + " `assetctl expire --collection \(collection) --older-than 0s`", section: s,
                        occurrence: n), &refused)
                continue
            }
            out.append(ttl)
        }
        return out
    }

    /// Warnings for legal but dangerous `[policy]` values: a byte budget or quota under 1 MiB,
    /// a quota for an owner no client can be, a TTL under a minute, a low-water mark under half
    /// the budget. Each names the file, line
    /// and key, as an error does, and says when a bare number was read as bytes or seconds.
    func policyWarnings(_ value: JSONValue, _ p: PolicyConfiguration) -> [String] {
        var out = [String]()
        func warn(_ key: String, _ message: String, section: String, occurrence: Int = 0) {
            out.append(error(key, message, section: section, occurrence: occurrence).description)
        }
        func bytes(_ raw: JSONValue?, _ n: Int64, _ key: String, _ what: String, section: String, occurrence: Int = 0) {
            guard n < 1 << 20 else { return }
            var m = "\(what) of \(n) bytes evicts nearly every object that holds a file at every run"
            if raw?.intValue != nil { m += "; a size without a unit counts bytes: write \"\(n)GiB\" for gibibytes" }
            warn(key, m, section: section, occurrence: occurrence)
        }
        if let n = p.maxBytes { bytes(value["max_bytes"], n, "policy.max_bytes", "a budget", section: "policy") }
        // Positions in the file's arrays: an entry refused and left out (`deferPolicyRefusals`)
        // shifts the kept ones. Owners and collections are each named once (duplicates refused).
        let rawQuotas = value["quota"]?.arrayValue ?? []
        let rawTTLs = value["ttl"]?.arrayValue ?? []
        for (k, q) in p.quotas.enumerated() {
            let i = rawQuotas.firstIndex { $0["owner"]?.stringValue.map { OwnerName.same($0, q.owner) } == true } ?? k
            let raw = rawQuotas.indices.contains(i) ? rawQuotas[i]["max_bytes"] : nil
            bytes(raw, q.maxBytes, "policy.quota.max_bytes", "a quota", section: "policy.quota", occurrence: i)
            // A user name starting with "#" is now "#" and the uid (PeerIdentity): "#alice" was
            // the name of a user whose new objects no longer count against this quota.
            // Only what PeerIdentity makes: "#" and a uid's decimal digits ("#01001" is no one).
            if q.owner.hasPrefix("#"), UInt32(q.owner.dropFirst()).map({ "#\($0)" }) != q.owner {
                warn(
                    "policy.quota.owner",
                    "no client is named \"\(q.owner)\": a user whose name starts with # is # and its uid (such as"
                        + " \"#5000\"), so this quota counts only objects put under that name before; write the uid",
                    section: "policy.quota", occurrence: i)
            }
        }
        for (k, t) in p.ttls.enumerated() {
            let i = rawTTLs.firstIndex { $0["collection"]?.stringValue == t.collection } ?? k
            for (key, d) in [("max_idle", t.maxIdle), ("max_age", t.maxAge)] {
                guard let d, d < 60 else { continue }
                let raw = rawTTLs.indices.contains(i) ? rawTTLs[i][key] : nil
                var m =
                    "a TTL of \(Units.formatDuration(d)) expires the objects of \"\(t.collection)\" as soon as min_age allows"
                if raw?.intValue != nil {
                    m += "; a duration without a unit counts seconds: write \"\(Int(d))d\" for days"
                }
                warn("policy.ttl.\(key)", m, section: "policy.ttl", occurrence: i)
            }
        }
        if p.maxBytes != nil, p.lowWater < 0.5 {
            warn(
                "policy.low_water",
                String(format: "each run over budget evicts down to %g%% of it", p.lowWater * 100)
                    + "; \"90%\" and 0.9 both mean 90%, \"0.9%\" means 0.9%", section: "policy")
        }
        return out
    }

    /// A size: "512MiB", "50GiB" or a number of bytes.
    func size(_ v: JSONValue, _ key: String, section: String, occurrence: Int = 0) throws(ConfigError) -> Int64 {
        guard let n = v.intValue ?? v.stringValue.flatMap(Units.size), n >= 0 else {
            throw error(
                key, "must be a size such as \"512MiB\", \"50GiB\" or a number of bytes", section: section,
                occurrence: occurrence)
        }
        return n
    }
}
