// One lease, and the bounds on what the daemon's clients' leases may hold (LeaseRegistry).

import JSON

/// One lease.
public struct Lease: Sendable, Hashable {
    /// Its handle, unique for the life of the store.
    public var id: String
    /// Objects it protects (they need not exist yet).
    public var objects: [ObjectRef]
    /// Files it protects, normalised.
    public var files: [String]
    /// Unix seconds at which it lapses, as the wall clock read when it was granted or listed:
    /// for display only. It lapses at `deadline`.
    public var expires: Double
    /// Who holds it (the daemon's connection number), nil for in-process holders.
    public var holder: UInt64?
    /// The uid of its holder's client, nil for in-process holders: with enforce_ownership a
    /// client lists only its own uid's leases.
    public var uid: UInt32? = nil
    /// Whose share of all leases it counts against (LeaseBounds.sharer), when not `uid`'s.
    public var sharer: UInt32? = nil
    /// When it lapses on the steady clock (`StoreConfiguration.steadyClock`): it lives in
    /// memory only, so a step of the wall clock (NTP's first sync, `date -s`) must not end it
    /// early nor keep it late (assetd(8), Leases).
    var deadline: Double = 0

    /// Its number, the digits of `id`: leases are listed in the order they were taken.
    var number: UInt64 { UInt64(id.dropFirst()) ?? 0 }

    /// `{lease, expires, objects, files}`.
    public var json: JSONValue {
        .object([
            "lease": .string(id), "expires": .double(expires),
            "objects": .array(objects.map(\.json)), "files": .array(files.map(JSONValue.string)),
        ])
    }

    /// As shown at `now`: its wall-clock expiry read from its deadline.
    func shown(_ now: ClockSteps.Reading) -> Lease {
        var l = self
        l.expires = now.wall(atSteady: deadline)
        return l
    }

    /// What it counts against the bounds: its objects and files, at least one.
    var entries: Int { Lease.entries(objects: objects.count, files: files.count) }
    static func entries(objects: Int, files: Int) -> Int { max(1, objects + files) }
}

/// How many entries (objects and files, a lease with neither counting as one) the leases of
/// one holder, of one user, and of all holders together, may hold. In-process holders (holder
/// nil) are neither bounded nor counted: the bounds are on what the daemon's clients may make it keep.
public struct LeaseBounds: Sendable, Equatable {
    /// `control.max_lease_entries_per_connection`.
    public var perHolder: Int
    /// `control.total_lease_entries`.
    public var total: Int
    /// What the leases of all of one uid's connections may hold: half of `total` for a
    /// non-admin (assetd.toml(5), [control]), so that one user's connections cannot take every
    /// entry and refuse every other user's lease; nil for admins.
    public var perUser: Int?
    /// Whose share `perUser` is, when not the caller's uid's: the first uid of the subordinate
    /// range the uid is in (assetd(8), Access), so that one user's many uids share one.
    public var sharer: UInt32?

    public init(perHolder: Int, total: Int, perUser: Int? = nil, sharer: UInt32? = nil) {
        self.perHolder = perHolder
        self.total = total
        self.perUser = perUser
        self.sharer = sharer
    }
}

extension LeaseRegistry {
    /// Throws `invalid_params` for a ttl out of range, a lease of nothing, or an invalid
    /// object: what a caller gets before any question of whose the objects and files are.
    public static func validate(objects: [ObjectRef], files: [String], ttl: Double) throws(StoreError) {
        guard ttl > 0, ttl <= LeaseRegistry.maximumTTL else {
            throw StoreError(.invalidParams, "a lease's ttl must be more than 0s and at most 1d")
        }
        guard !objects.isEmpty || !files.isEmpty else {
            throw StoreError(.invalidParams, "a lease needs at least one object or file")
        }
        for o in objects { try o.validate() }
    }

    /// Throws `lease_limit` if a lease of `objects` objects and `files` files would take
    /// `holder`'s live leases, or all, past `bounds` now: what a caller asks before judging
    /// whose they are (reads, a walk a file), so that a lease refused for its size costs none
    /// of those. `acquire` checks again.
    public func checkBounds(
        objects: Int, files: Int, holder: UInt64?, uid: UInt32? = nil, bounds: LeaseBounds?
    ) throws(StoreError) {
        guard let bounds, let holder else { return }
        let entries = Lease.entries(objects: objects, files: files)
        let now = clocks.steady()
        let refused = state.withLock { s -> StoreError? in
            do throws(StoreError) {
                try s.check(entries, holder: holder, uid: uid, bounds, now: now)
                return nil
            } catch {
                return error
            }
        }
        if let refused { throw refused }
    }

    /// The objects and files of the live leases of `uid`'s connections: what a new lease of
    /// that user, or a write that can grow what they keep, adds to for its quota's check. The
    /// lock is every acquire's, release's, the policy snapshot's and the unlinker's, and a uid
    /// may hold 65,536 leases: its set of ids is taken (shared, not copied), and the leases
    /// looked up 256 a hold, flattened after. A change of the uid's leases during the walk
    /// copies the set once, under the lock: what copying it here would cost every walk.
    public func leased(uid: UInt32) -> (objects: [ObjectRef], files: [String]) {
        let now = clocks.steady()
        let ids = state.withLock { $0.byUID[uid] ?? [] }
        var live = [Lease]()
        var chunk = [String]()
        chunk.reserveCapacity(256)
        func take() {
            state.withLock { s in
                s.mostWalked = max(s.mostWalked, chunk.count)
                for id in chunk { if let l = s.leases[id], l.deadline > now { live.append(l) } }
            }
            chunk.removeAll(keepingCapacity: true)
        }
        for id in ids {
            chunk.append(id)
            if chunk.count == 256 { take() }
        }
        if !chunk.isEmpty { take() }
        var (objects, files) = ([ObjectRef](), [String]())
        objects.reserveCapacity(live.reduce(0) { $0 + $1.objects.count })
        files.reserveCapacity(live.reduce(0) { $0 + $1.files.count })
        for l in live {
            objects += l.objects
            files += l.files
        }
        return (objects, files)
    }
}
