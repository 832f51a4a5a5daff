// The lease registry's state, under its lock (LeaseRegistry): the leases, what they count
// against the bounds, their files by path and their order for lease.list.

/// The live leases and their indexes. Not thread-safe: the registry holds it under its lock.
struct LeaseState {
    var leases: [String: Lease] = [:]
    /// The next lease number, and the end of the block reserved for this run (LeaseNumbers).
    var next: UInt64 = 0
    var end: UInt64 = 0
    /// The block reserved ahead (LeaseNumbers), taken up when `next` reaches `end`.
    var spare: (first: UInt64, end: UInt64)?
    /// The `end` of the block a reservation ahead was last started for: one per block.
    var aheadFor: UInt64 = 0
    /// The ids of each holder's leases, lapsed ones not yet removed included.
    var byHolder: [UInt64: Set<String>] = [:]
    /// The same by the holders' uids: a quota bounds what one user's leases keep.
    var byUID: [UInt32: Set<String>] = [:]
    /// What they name by uid, for a write's test of whether it can grow what they keep.
    var names: [UInt32: LeasedNames] = [:]
    /// How many leases each uid holds, readable without this state's lock (LeasedNames.swift).
    var holders = LeaseHolders()
    /// Entries of the leases in `leases` with a holder, lapsed ones not yet removed included.
    var held: [UInt64: Int] = [:]
    /// The same by their sharers (Lease.sharer, else the uid), for a non-admin's share
    /// (LeaseBounds.perUser), and the ids of the leases of each.
    var heldBySharer: [UInt32: Int] = [:]
    var bySharer: [UInt32: Set<String>] = [:]
    var total = 0
    /// At most the earliest expiry of the leases counted in `total`: none has lapsed before it.
    var earliest = Double.infinity
    /// The leases' files by path, lapsed leases not yet removed included.
    var files = LeasedFiles()
    /// Tests: how many leases walks of `leases` (not the file lookups) looked at so far.
    var walked = 0
    /// Tests: the most leases a `list` or `snapshot` chunk walked in one hold of the lock.
    var mostWalked = 0
    /// Tests: the most file lookups done in one hold of the lock.
    var mostLookups = 0
    /// Tests: the most paths `removeExpired` took out of `files` in one hold of the lock.
    var mostRemoved = 0
    /// Every lease's number and id in the order taken (numbers only grow, so it is sorted),
    /// ended ones included until `dropped` passes half: `list` pages without a full pass.
    var order: [(number: UInt64, id: String)] = []
    var dropped = 0

    /// Takes the next lease number, moving on to the block reserved ahead when this one is
    /// used up; nil if there is none.
    mutating func takeNumber() -> UInt64? {
        if next >= end, let b = spare { (next, end, spare) = (b.first, b.end, nil) }
        guard next < end else { return nil }
        defer { next += 1 }
        return next
    }

    var hasNumber: Bool { next < end || spare != nil }

    /// Whether to reserve the block after this one now: a quarter of `perBlock` or less is
    /// left, and none is reserved, nor was a reservation started, for it.
    mutating func startsAhead(perBlock: UInt64) -> Bool {
        guard spare == nil, aheadFor != end, end - next <= perBlock / 4 else { return false }
        aheadFor = end
        return true
    }

    mutating func insert(_ l: Lease) {
        leases[l.id] = l
        order.append((l.number, l.id))
        files.insert(l)
        guard let h = l.holder else { return }
        byHolder[h, default: []].insert(l.id)
        if let u = l.uid {
            byUID[u, default: []].insert(l.id)
            names[u, default: LeasedNames()].add(l)
            holders.add(u)
            heldBySharer[l.sharer ?? u, default: 0] += l.entries
            bySharer[l.sharer ?? u, default: []].insert(l.id)
        }
        held[h, default: 0] += l.entries
        total += l.entries
        earliest = min(earliest, l.deadline)
    }

    mutating func remove(_ id: String) -> Lease? {
        guard let l = leases.removeValue(forKey: id) else { return nil }
        files.remove(l)
        dropped += 1
        if dropped > 64 && dropped > order.count / 2 {
            order.removeAll { leases[$0.id] == nil }
            dropped = 0
        }
        guard let h = l.holder else { return l }
        let left = held[h, default: 0] - l.entries
        total -= l.entries
        assert(left >= 0 && total >= 0, "lease counts below zero")
        held[h] = left > 0 ? left : nil
        byHolder[h]?.remove(id)
        if byHolder[h]?.isEmpty == true { byHolder[h] = nil }
        if let u = l.uid {
            byUID[u]?.remove(id)
            if byUID[u]?.isEmpty == true { byUID[u] = nil }
            names[u]?.drop(l)
            if names[u]?.isEmpty == true { names[u] = nil }
            holders.drop(u)
            let k = l.sharer ?? u
            let leftBySharer = heldBySharer[k, default: 0] - l.entries
            heldBySharer[k] = leftBySharer > 0 ? leftBySharer : nil
            bySharer[k]?.remove(id)
            if bySharer[k]?.isEmpty == true { bySharer[k] = nil }
        }
        if total == 0 { earliest = .infinity }
        return l
    }

    /// `files.leasedUntil` for each of `paths`, in their order.
    mutating func leasedUntil(_ paths: ArraySlice<String>, now: Double) -> [Double?] {
        mostLookups = max(mostLookups, paths.count)
        return paths.map { files.leasedUntil($0, now: now) }
    }

    /// The position in `order` of the first lease taken after lease number `n`.
    func firstAfter(_ n: UInt64) -> Int {
        var (lo, hi) = (0, order.count)
        while lo < hi {
            let mid = (lo + hi) / 2
            if order[mid].number <= n { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Refuses `entries` more for `holder` if its live leases, or all live leases, would
    /// then hold more than `bounds`. Lapsed leases the sweep has not removed yet do not
    /// count; they are looked for only near a bound (among the holder's own leases for its
    /// bound, and only if one can have lapsed). They still take memory until the sweep
    /// starts (which can be long), and a tiny ttl lapses at once, so with them the counts
    /// are bounded at twice `bounds`.
    mutating func check(
        _ entries: Int, holder: UInt64, uid: UInt32? = nil, _ bounds: LeaseBounds, now: Double
    ) throws(StoreError) {
        let someLapsed = earliest <= now
        var mine = held[holder, default: 0]
        if mine + entries > bounds.perHolder && someLapsed {
            walked += byHolder[holder]?.count ?? 0
            for id in byHolder[holder] ?? [] {
                if let l = leases[id], l.deadline <= now { mine -= l.entries }
            }
        }
        if mine + entries > bounds.perHolder {
            throw StoreError.leaseLimit(
                "this connection's leases", "control.max_lease_entries_per_connection", bounds.perHolder,
                held: mine)
        }
        // Within its live bound; lapsed leases not yet removed still take memory.
        let rawMine = held[holder, default: 0]
        if rawMine + entries > 2 * bounds.perHolder {
            throw StoreError.leaseLimit(
                "this connection's leases", "control.max_lease_entries_per_connection", bounds.perHolder,
                held: rawMine, lapsed: true)
        }
        if let perUser = bounds.perUser, let uid {
            try checkUser(entries, sharer: bounds.sharer ?? uid, perUser, now: now)
        }
        // Before the scan of every lease below, which this spares a full registry.
        if total + entries > 2 * bounds.total {
            throw StoreError.leaseLimit(
                "all leases", "control.total_lease_entries", bounds.total, held: total, lapsed: true)
        }
        var all = total
        if all + entries > bounds.total && someLapsed {
            walked += leases.count
            for l in leases.values where l.holder != nil && l.deadline <= now { all -= l.entries }
        }
        if all + entries > bounds.total {
            throw StoreError.leaseLimit("all leases", "control.total_lease_entries", bounds.total, held: all)
        }
    }

    /// Refuses `entries` more for `sharer` past its share, as `check` does for a holder: one
    /// user's many connections (256 of 4,096 entries each) would otherwise fill the total, and
    /// every other user's lease be refused for as long as they stay.
    private mutating func checkUser(_ entries: Int, sharer: UInt32, _ perUser: Int, now: Double) throws(StoreError) {
        let whose = "this user's leases"
        let key = "half of control.total_lease_entries"
        var mine = heldBySharer[sharer, default: 0]
        if mine + entries > perUser && earliest <= now {
            walked += bySharer[sharer]?.count ?? 0
            for id in bySharer[sharer] ?? [] {
                if let l = leases[id], l.holder != nil, l.deadline <= now { mine -= l.entries }
            }
        }
        if mine + entries > perUser { throw StoreError.leaseLimit(whose, key, perUser, held: mine) }
        let raw = heldBySharer[sharer, default: 0]
        if raw + entries > 2 * perUser {
            throw StoreError.leaseLimit(whose, key, perUser, held: raw, lapsed: true)
        }
    }
}
