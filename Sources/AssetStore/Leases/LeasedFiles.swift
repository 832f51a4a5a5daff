// The files the registry's leases cover, indexed by path. Every unlink asks about its file
// inside the sweep's write transaction, with the registry's lock held, while every client's
// puts wait for the writer: a lookup must not scan the leases (up to twice
// `control.total_lease_entries` of them) nor allocate per leased path. Nor may the index copy
// the paths: they are most of what leases take in memory.

/// A path as its UTF-8 bytes (paths compare byte for byte, not as Unicode text), sharing
/// the storage of the String it wraps: a lease's own, or the path being looked up.
struct PathKey: Hashable {
    var path: String

    static func == (a: PathKey, b: PathKey) -> Bool { a.path.utf8.elementsEqual(b.path.utf8) }

    func hash(into h: inout Hasher) {
        var path = path
        // Native Strings are contiguous already: no copy.
        path.makeContiguousUTF8()
        path.utf8.withContiguousStorageIfAvailable { h.combine(bytes: UnsafeRawBufferPointer($0)) }
        h.combine(path.utf8.count)
    }
}

/// Per path, the leases that cover it and the latest of their expiries. Part of the
/// registry's state, under its lock.
struct LeasedFiles {
    private struct Entry {
        /// One lease covering it, kept inline: most paths have one.
        var id: String
        var expires: Double
        /// The other leases covering it, id → expiry; lapsed leases not yet removed included.
        var others: [String: Double]? = nil
        /// The latest expiry of them all, unless `stale`.
        var latest: Double
        /// A lease with the latest expiry was removed: recomputed at the next lookup, so that
        /// ending many leases of one path costs one pass, not one each.
        var stale = false

        init(_ id: String, _ expires: Double) {
            (self.id, self.expires, latest) = (id, expires, expires)
        }

        var count: Int { 1 + (others?.count ?? 0) }

        mutating func add(_ id: String, _ expires: Double) {
            if id == self.id { return }  // a lease naming the path twice
            others = others ?? [:]
            others?[id] = expires
            if !stale { latest = max(latest, expires) }
        }

        /// Drops `id`'s lease; true when none is left.
        mutating func drop(_ id: String) -> Bool {
            let gone: Double
            if id == self.id {
                guard let next = others?.first else { return true }
                gone = expires
                others?[next.key] = nil
                (self.id, expires) = next
            } else {
                guard let e = others?.removeValue(forKey: id) else { return false }
                gone = e
            }
            if others?.isEmpty == true { others = nil }
            if gone >= latest { stale = true }
            return false
        }

        mutating func refresh() {
            latest = others?.values.reduce(expires, max) ?? expires
            stale = false
        }
    }

    private var paths: [PathKey: Entry] = [:]
    /// Tests: how many leases lookups looked at, one per lookup at least.
    private(set) var examined = 0

    mutating func insert(_ l: Lease) {
        for f in l.files {
            let key = PathKey(path: f)
            if paths[key] == nil {
                paths[key] = Entry(l.id, l.expires)
            } else {
                paths[key]?.add(l.id, l.expires)
            }
        }
    }

    mutating func remove(_ l: Lease) {
        for f in l.files {
            let key = PathKey(path: f)
            if paths[key]?.drop(l.id) == true { paths[key] = nil }
        }
    }

    /// The latest expiry of the live leases covering `path`, nil if none does.
    mutating func leasedUntil(_ path: String, now: Double) -> Double? {
        examined += 1
        let key = PathKey(path: path)
        guard let stale = paths[key]?.stale else { return nil }
        if stale {
            examined += paths[key]?.count ?? 0
            paths[key]?.refresh()
        }
        guard let latest = paths[key]?.latest, latest > now else { return nil }
        return latest
    }
}
