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

/// Per path, the leases that cover it and the latest of their expiries (their deadlines, on
/// the steady clock: `Lease.deadline`). Part of the registry's state, under its lock.
struct LeasedFiles {
    private struct Entry {
        /// One lease covering it, kept inline: most paths have one. The entry's key is this
        /// lease's path String.
        var id: String
        var expires: Double
        /// The other leases covering it, id → expiry and that lease's own path String (which
        /// becomes the key when the lease moves inline); lapsed leases not yet removed included.
        var others: [String: (expires: Double, path: String)]? = nil
        /// The latest expiry of them all, unless `stale`.
        var latest: Double
        /// A lease with the latest expiry was removed: recomputed at the next lookup, so that
        /// ending many leases of one path costs one pass, not one each.
        var stale = false

        init(_ id: String, _ expires: Double) {
            (self.id, self.expires, latest) = (id, expires, expires)
        }

        var count: Int { 1 + (others?.count ?? 0) }

        mutating func add(_ id: String, _ expires: Double, _ path: String) {
            if id == self.id { return }  // a lease naming the path twice
            others = others ?? [:]
            others?[id] = (expires, path)
            if !stale { latest = max(latest, expires) }
        }

        enum Dropped {
            case kept
            /// None is left.
            case empty
            /// The inline lease ended and another moved inline: its path must become the key,
            /// or the key would keep the ended lease's String alive beside it.
            case rekey(String)
        }

        /// Drops `id`'s lease.
        mutating func drop(_ id: String) -> Dropped {
            let gone: Double
            var promoted: String?
            if id == self.id {
                guard let next = others?.first else { return .empty }
                gone = expires
                others?[next.key] = nil
                (self.id, expires, promoted) = (next.key, next.value.expires, next.value.path)
            } else {
                guard let e = others?.removeValue(forKey: id) else { return .kept }
                gone = e.expires
            }
            if others?.isEmpty == true { others = nil }
            if gone >= latest { stale = true }
            return promoted.map(Dropped.rekey) ?? .kept
        }

        mutating func refresh() {
            latest = others?.values.reduce(expires) { max($0, $1.expires) } ?? expires
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
                paths[key] = Entry(l.id, l.deadline)
            } else {
                paths[key]?.add(l.id, l.deadline, f)
            }
        }
    }

    mutating func remove(_ l: Lease) {
        for f in l.files {
            guard let i = paths.index(forKey: PathKey(path: f)) else { continue }
            switch paths.values[i].drop(l.id) {
            case .kept: break
            case .empty: paths.remove(at: i)
            case .rekey(let path):
                let e = paths.remove(at: i).value
                paths[PathKey(path: path)] = e
            }
        }
    }

    /// Tests: the address of the UTF-8 bytes of the String keying `path`, nil if none does.
    func keyAddress(_ path: String) -> UInt? {
        guard let i = paths.index(forKey: PathKey(path: path)) else { return nil }
        return paths.keys[i].path.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
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
