// The files the registry's leases cover, indexed by path. Every unlink asks about its file
// inside the sweep's write transaction, with the registry's lock held, while every client's
// puts wait for the writer: a lookup must not scan the leases (up to twice
// `control.total_lease_entries` of them) nor allocate per leased path.

/// Per path (its UTF-8 bytes: paths compare byte for byte), the leases that cover it and
/// the latest of their expiries. Part of the registry's state, under its lock.
struct LeasedFiles {
    private struct Entry {
        /// Lease id → its expiry, lapsed leases not yet removed included.
        var leases: [String: Double] = [:]
        /// The latest expiry in `leases`, unless `stale`.
        var latest = -Double.infinity
        /// A lease with the latest expiry was removed: recomputed at the next lookup, so that
        /// ending many leases of one path costs one pass, not one each.
        var stale = false

        mutating func add(_ id: String, _ expires: Double) {
            leases[id] = expires
            if !stale { latest = max(latest, expires) }
        }

        /// Drops `id`'s lease; true when none is left.
        mutating func drop(_ id: String) -> Bool {
            guard let expires = leases.removeValue(forKey: id) else { return false }
            if expires >= latest { stale = true }
            return leases.isEmpty
        }

        mutating func refresh() {
            latest = leases.values.reduce(-Double.infinity, max)
            stale = false
        }
    }

    private var paths: [[UInt8]: Entry] = [:]
    /// Tests: how many leases lookups looked at, one per lookup at least.
    private(set) var examined = 0

    mutating func insert(_ l: Lease) {
        for f in l.files {
            paths[Array(f.utf8), default: Entry()].add(l.id, l.expires)
        }
    }

    mutating func remove(_ l: Lease) {
        for f in l.files {
            let key = Array(f.utf8)
            if paths[key]?.drop(l.id) == true { paths[key] = nil }
        }
    }

    /// The latest expiry of the live leases covering `path`, nil if none does.
    mutating func leasedUntil(_ path: [UInt8], now: Double) -> Double? {
        examined += 1
        guard let stale = paths[path]?.stale else { return nil }
        if stale {
            examined += paths[path]?.leases.count ?? 0
            paths[path]?.refresh()
        }
        guard let latest = paths[path]?.latest, latest > now else { return nil }
        return latest
    }
}
