// One lock per uid, held across a lease's count against its user's quota and its grant, or a
// leased write's count and its write until durable: two leases (or a lease and a write) of one
// user at once on two connections were each counted without the other, and each passing
// alone, together passed the quota. Keyed by uid, so that the leases and writes of other users
// are not held up by a count's read.

import Synchronization

/// Locks by uid, each kept while some thread holds it or waits for it.
final class UIDLocks: Sendable {
    private let locks = Mutex<[UInt32: (lock: SharedExclusiveLock, users: Int)]>([:])
    /// Tests: runs when a thread has to wait for another of the same uid.
    let waiting = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests: runs between the count and the grant, holding the lock.
    let counted = Mutex<(@Sendable () -> Void)?>(nil)

    /// Runs `count`, then `grant`, holding `uid`'s lock.
    func with<T>(_ uid: UInt32, count: () throws -> Void, grant: () throws -> T) throws -> T {
        let lock = locks.withLock { l in
            var entry = l[uid] ?? (SharedExclusiveLock(), 0)
            entry.users += 1
            l[uid] = entry
            return entry.lock
        }
        defer {
            locks.withLock { l in
                if let e = l[uid] { l[uid] = e.users > 1 ? (e.lock, e.users - 1) : nil }
            }
        }
        let waits = waiting.withLock { $0 }
        return try lock.exclusive(waiting: waits) {
            try count()
            counted.withLock { $0 }?()
            return try grant()
        }
    }
}

extension LeaseRegistry {
    /// Runs `count` (a lease's check against its user's quota), then `grant` (its `acquire`, or
    /// a leased write), with no other lease or leased write of `uid` counted or done in between.
    /// Never inside a write transaction: the lock comes before the writer and the registry's gates.
    public func counted<T>(uid: UInt32, _ count: () throws -> Void, then grant: () throws -> T) throws -> T {
        try uidLocks.with(uid, count: count, grant: grant)
    }
}
