// A snapshot of everything under a live lease, for policy batches and verify. It copies the
// leases a chunk at a time in the order they were taken: every unlink's check, every lease's
// grant and end, and every connection's close wait for the registry's lock, and a full registry
// (twice control.total_lease_entries) took one hold of it for the whole copy.

extension LeaseRegistry {
    /// Leases copied per hold of the registry's lock.
    static let snapshotChunk = 256

    /// Objects and files under a live lease, both as UTF-8 bytes: a lease of `cafe\u{301}`
    /// must not protect the row `caf\u{e9}`, which String's equality takes for the same. Costs a pass over every lease:
    /// callers with a few paths of their own ask `leasedUntil(files:)`.
    ///
    /// Not one instant's view, but as safe: every lease live from the start of the walk to its
    /// end is in it; one taken meanwhile is appended to the order and found by the walk, which
    /// runs to the order's end (a policy batch holds new leases back from before it asks,
    /// `beginPolicyBatch`, and the files of a later lease are guarded at their unlink too);
    /// one ended meanwhile may be in it, which only protects more. It resumes by
    /// number, as `list` does: the order may be compacted between holds.
    public func snapshot() -> (objects: Set<ObjectRefKey>, files: Set<[UInt8]>) {
        let now = clocks.steady()
        var leases = [Lease]()
        var after: UInt64 = 0  // lease numbers start at 1
        var end = false
        // Only copied under the lock (no hashing of paths, no allocation per path): the sets
        // of a full registry take long to build.
        while !end {
            state.withLock { s in
                let first = s.firstAfter(after)
                let stop = min(s.order.count, first + LeaseRegistry.snapshotChunk)
                for i in first..<stop {
                    if let l = s.leases[s.order[i].id], l.deadline > now { leases.append(l) }
                }
                s.walked += stop - first
                s.mostWalked = max(s.mostWalked, stop - first)
                if stop > first { after = s.order[stop - 1].number }
                end = stop == s.order.count
            }
            if !end, let hook = snapshotChunkDone.withLock({ $0 }) { hook() }
        }
        var objects = Set<ObjectRefKey>()
        var files = Set<[UInt8]>()
        for l in leases {
            for o in l.objects { objects.insert(ObjectRefKey(o)) }
            for f in l.files { files.insert(Array(f.utf8)) }
        }
        return (objects, files)
    }
}
