// What each uid's leases name, objects by their bytes and files by path, counted per lease
// naming them, and how many leases each uid holds: a non-admin's write is looked at further
// only if its uid holds one (asked on the daemon's loop, O(1), off the state lock), and then,
// on the pool, counted against its quota only if it can grow what its leases keep.

import Synchronization

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

/// How many leases each uid holds (lapsed ones not yet removed included), under a lock of its
/// own, taken under the registry's state lock and under nothing else, held for one lookup or
/// one bump: the daemon asks it on its loop before a non-admin's every write, which must not
/// wait for the state lock (held by a lease's bookkeeping, a policy snapshot's chunk, a walk).
final class LeaseHolders: Sendable {
    private let counts = Mutex<[UInt32: Int]>([:])

    func add(_ uid: UInt32) { counts.withLock { $0[uid, default: 0] += 1 } }

    func drop(_ uid: UInt32) {
        counts.withLock { c in
            if let n = c[uid] { c[uid] = n > 1 ? n - 1 : nil }
        }
    }

    func holds(_ uid: UInt32) -> Bool { counts.withLock { $0[uid] != nil } }
}

extension LeaseRegistry {
    /// Whether a connection of `uid` holds a lease: one lookup, under `holders`' lock only.
    public func holdsLeases(uid: UInt32) -> Bool { holders.holds(uid) }

    /// Whether a lease of `uid`'s connections names one of `objects` or of `files`
    /// (normalised paths): a write of them can grow what those leases keep from eviction.
    /// Looked up 256 at a time per hold of the lock: a put's value may name 100,000 files.
    public func leasesName(uid: UInt32, objects: [ObjectRef], files: [String]) -> Bool {
        let chunk = 256
        for start in stride(from: 0, to: objects.count, by: chunk) {
            let part = objects[start..<min(start + chunk, objects.count)]
            let hit = state.withLock { s in
                s.names[uid].map { names in part.contains { names.objects[ObjectRefKey($0)] != nil } }
            }
            guard let hit else { return false }
            if hit { return true }
        }
        for start in stride(from: 0, to: files.count, by: chunk) {
            let part = files[start..<min(start + chunk, files.count)]
            let hit = state.withLock { s in
                s.names[uid].map { names in part.contains { names.files[PathKey(path: $0)] != nil } }
            }
            guard let hit else { return false }
            if hit { return true }
        }
        return false
    }
}
