// A shared/exclusive lock (pthread rwlock) that prefers the exclusive side: many sweep
// threads unlink under it shared at once, and a lease acquire (on the daemon's thread pool,
// as it may wait) waits only for the unlinks already under way, never for a stream of new ones.
// A second one orders new leases against policy batches.

import Glibc

/// Many holders at once (`shared`), or one (`exclusive`); a waiting exclusive holder keeps
/// new shared holders out. Not recursive: a shared holder must not take it again.
final class SharedExclusiveLock: @unchecked Sendable {  // the rwlock is thread-safe; the pointer never changes
    // Heap-allocated: a pthread lock must not move.
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // Without it glibc prefers readers, and overlapping unlinks could keep a lease waiting.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        let r = pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        precondition(r == 0, "pthread_rwlock_init: \(r)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` holding the lock shared.
    func shared<T>(_ body: () throws -> T) rethrows -> T {
        let r = pthread_rwlock_rdlock(lock)
        precondition(r == 0, "pthread_rwlock_rdlock: \(r)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` holding the lock alone; `waiting` (tests) runs first if it must wait.
    func exclusive<T>(waiting: (() -> Void)? = nil, _ body: () throws -> T) rethrows -> T {
        if pthread_rwlock_trywrlock(lock) != 0 {
            waiting?()
            let r = pthread_rwlock_wrlock(lock)
            precondition(r == 0, "pthread_rwlock_wrlock: \(r)")
        }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Takes the lock shared until `unlockShared`, for a hold that outlives the caller's
    /// scope (it ends after a commit the caller does not see). Never while already holding it.
    func lockShared() {
        let r = pthread_rwlock_rdlock(lock)
        precondition(r == 0, "pthread_rwlock_rdlock: \(r)")
    }

    /// Ends a `lockShared` hold.
    func unlockShared() { pthread_rwlock_unlock(lock) }
}
