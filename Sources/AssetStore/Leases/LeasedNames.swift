// What each uid's leases name, objects by their bytes and files by path, counted per lease
// naming them: a write of a non-admin asks it before every put, so a put of nothing its uid
// leased pays one lookup (none if the uid holds no lease), and only a write that can grow
// what its leases keep is counted against its quota. Part of the registry's state.

/// The objects and files one uid's leases name, each with how many of them name it (lapsed
/// leases not yet removed included: a write they name is counted for nothing, never missed).
struct LeasedNames {
    var objects: [ObjectRefKey: Int] = [:]
    var files: [PathKey: Int] = [:]

    var isEmpty: Bool { objects.isEmpty && files.isEmpty }

    mutating func add(_ l: Lease) {
        for o in l.objects { objects[ObjectRefKey(o), default: 0] += 1 }
        for f in l.files { files[PathKey(path: f), default: 0] += 1 }
    }

    mutating func drop(_ l: Lease) {
        for o in l.objects { Self.decrement(&objects, ObjectRefKey(o)) }
        for f in l.files { Self.decrement(&files, PathKey(path: f)) }
    }

    private static func decrement<K>(_ counts: inout [K: Int], _ key: K) {
        guard let n = counts[key] else { return }
        counts[key] = n > 1 ? n - 1 : nil
    }
}

extension LeaseRegistry {
    /// Whether a lease of `uid`'s connections names anything: one lookup, the first question
    /// before a write of that uid is looked at further.
    public func leasesNames(uid: UInt32) -> Bool {
        state.withLock { $0.names[uid] != nil }
    }

    /// Whether a lease of `uid`'s connections names one of `objects` or of `files`
    /// (normalised paths): a write of them can grow what those leases keep from eviction.
    public func leasesName(uid: UInt32, objects: [ObjectRef], files: [String]) -> Bool {
        state.withLock { s in
            guard let names = s.names[uid] else { return false }
            return objects.contains { names.objects[ObjectRefKey($0)] != nil }
                || files.contains { names.files[PathKey(path: $0)] != nil }
        }
    }
}
