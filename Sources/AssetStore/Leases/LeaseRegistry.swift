// Leases (assetd(8), DATA MODEL, Lifecycle policies): in-memory protections of objects and files
// for in-flight work, ended by release, by their TTL, or by the daemon when the connection that
// took them closes. They live in memory on purpose: a lease belongs to a live client, and no client
// outlives the daemon. Leased objects are never evicted or expired; a leased file whose unlink is
// queued (an explicit delete is not blocked by leases) is kept until the lease ends. A new lease is
// ordered against the unlinks and policy batches under way (see the gates below). What the leases
// of the daemon's clients hold is bounded (LeaseBounds), per connection and in all: they live in
// memory, and every policy batch copies them into its protection sets.

import JSON
import Synchronization

/// The store's live leases. Thread-safe; expired leases count as absent.
public final class LeaseRegistry: Sendable {
    /// Its state; internal only for the walks kept in files of their own (LeaseSnapshot.swift).
    let state: Mutex<LeaseState>
    /// How many leases each uid holds, under a lock of its own (LeasedNames.swift).
    let holders = LeaseHolders()

    /// Orders new leases against unlinks: unlinks hold it shared (several sweep threads at
    /// once), a new lease exclusively, so it is answered only after the unlinks under way.
    private let gate = SharedExclusiveLock()
    /// Orders new leases against policy batches the same way: a real batch holds it shared
    /// from its first look at the leases until its commit returned, a new lease (of objects,
    /// of files, or both) exclusively. A lease of files only takes it too: granted between a
    /// batch's look and its commit, it would not stop that batch deleting the object that
    /// holds the file, only the file's unlink. Its own lock, not `gate`: a batch holds it across a whole write
    /// transaction, and a sweep in its write transaction may need `gate` shared meanwhile.
    ///
    /// No deadlock: locks are taken in one order, SQLite's write lock (and GRDB's writer),
    /// then `objectGate`, then `gate`. A batch takes `objectGate` once, inside its write
    /// transaction (so never while waiting for the writer), and while holding it only
    /// `gate` shared, later in the order (its unlinks beside it, SweepAlongside.swift); the
    /// sweep takes the writer, then `gate`; `acquire` takes `objectGate`, then
    /// `gate`, and never runs inside a write transaction. A waiting exclusive holder waits
    /// only for holders that wait on later locks, if at all, so every chain of waits climbs
    /// that order and ends. `acquire` waits at most for one batch's deletions and commit: the
    /// next block of lease numbers is reserved on a thread of its own while a quarter of the
    /// current one is left (LeaseNumbers.swift). Only if that has not ended (or failed) when
    /// the block is used up does the acquire that finds it so leave the gates, wait for the
    /// writer (behind whatever write holds it) to reserve one, and try again; acquires
    /// meanwhile, of files only too, wait for that reservation.
    /// A uid's lock (UIDLocks) comes before all of these: it is held across a lease's read of
    /// the store and its `acquire`, or a leased write's read and its whole write, and taken by
    /// nothing holding another.
    /// `state`'s lock comes last: no other lock is taken, nor any waited for, while holding it,
    /// but `holders`' (a count by uid, bumped as a lease comes and goes) and the clocks'
    /// (ClockSteps), taken by nothing else.
    /// What runs under it is bounded but not always short: the clock read, a lease's
    /// bookkeeping, file lookups (256 at most per hold for long lists), a `list` or `snapshot`
    /// chunk, and passes over every lease (`removeExpired`'s search, the order's compaction);
    /// `removeExpired` takes lapsed leases out 256 paths at a time.
    private let objectGate = SharedExclusiveLock()
    /// Deadlines are on the steady clock, shown on the wall clock (Lease.deadline).
    let clocks: ClockSteps
    /// Tests: runs when `acquire` has to wait for a policy batch to commit.
    let acquireWaits = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests: runs when `acquire` has to wait for unlinks under way.
    let unlinkWaits = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests: runs between two of `snapshot`'s holds of the lock.
    let snapshotChunkDone = Mutex<(@Sendable () -> Void)?>(nil)
    private let roots: ManagedRoots
    /// Where lease numbers come from (LeaseNumbers.swift): never the same twice for a store.
    let numbers = LeaseNumbers()
    /// Held by uid across a lease's quota count and its grant (UIDLocks.swift).
    let uidLocks = UIDLocks()

    init(roots: ManagedRoots, clocks: ClockSteps) {
        self.roots = roots
        self.clocks = clocks
        state = Mutex(LeaseState(holders: holders))
    }

    /// The longest lease: a day (a backstop for clients that never release).
    public static let maximumTTL = 86_400.0

    /// Takes a lease on `objects` and `files` for `ttl` seconds. Files must lie under a
    /// managed root; objects are validated but need not exist. A lease waits for a policy
    /// batch under way to commit, and a lease past the block of numbers reserved
    /// writes the store, so neither may be taken inside a write transaction.
    /// With `bounds` and a holder, a lease that would take the holder's or all live leases past
    /// them is refused whole (`lease_limit`).
    public func acquire(
        objects: [ObjectRef], files: [String], ttl: Double, holder: UInt64? = nil, uid: UInt32? = nil,
        bounds: LeaseBounds? = nil
    ) throws(StoreError) -> Lease {
        try LeaseRegistry.validate(objects: objects, files: files, ttl: ttl)
        var paths = [String]()
        for f in files { paths.append(try roots.accept(f).path) }
        let entries = Lease.entries(objects: objects.count, files: paths.count)
        let check = { (s: inout LeaseState) -> StoreError? in
            guard let bounds, let holder else { return nil }
            do throws(StoreError) {
                try s.check(entries, holder: holder, uid: uid, bounds, now: self.clocks.steady())
                return nil
            } catch {
                return error
            }
        }
        // Refused before either gate: a refusal must not wait for, nor hold up, unlinks and
        // policy batches. Checked again when granted, as other leases may come in between.
        try checkBounds(objects: objects.count, files: paths.count, holder: holder, uid: uid, bounds: bounds)
        // Nil: the numbers ran out meanwhile (other leases took the last of the block).
        let ahead = Atomic<Bool>(false)  // this lease left a quarter of the block: reserve the next
        let grant = { () -> Result<Lease?, StoreError> in
            let waiting: (@Sendable () -> Void)? = self.unlinkWaits.withLock { $0 }
            return self.gate.exclusive(waiting: waiting) {
                self.state.withLock { s in
                    if let refused = check(&s) { return .failure(refused) }
                    guard let number = s.takeNumber() else { return .success(nil) }
                    // From now, after the waits for the gates: a lease answered lapsed (a short
                    // ttl behind a long batch) would protect nothing.
                    let now = self.clocks.read()
                    let lease = Lease(
                        id: "L\(number)", objects: objects, files: paths, expires: now.wall + ttl, holder: holder,
                        uid: uid, sharer: bounds?.sharer, deadline: now.steady + ttl)
                    s.insert(lease)
                    if s.startsAhead(perBlock: self.numbers.perBlock.load(ordering: .relaxed)) {
                        ahead.store(true, ordering: .relaxed)
                    }
                    return .success(lease)
                }
            }
        }
        while true {
            let waiting: (@Sendable () -> Void)? = acquireWaits.withLock { $0 }
            let granted = try objectGate.exclusive(waiting: waiting, grant).get()
            if let granted {
                if ahead.load(ordering: .relaxed) { reserveAhead() }
                return granted
            }
            try numbers.ensure(state)  // outside the gates: it takes the writer
        }
    }

    /// Reserves lease numbers now if none are left (at the open), with `through` if given.
    func reserveNumbers(through: ((UInt64) throws -> UInt64)? = nil) throws(StoreError) {
        try numbers.ensure(state, through: through)
    }

    /// Holds new leases back until `endPolicyBatch`: taken by a real policy batch before it
    /// reads the leases, so a lease is answered either before its decisions (which then spare
    /// the object, or the object whose deletion would unlink the file) or after its commit.
    /// Once per batch, inside its write transaction.
    func beginPolicyBatch() { objectGate.lockShared() }

    /// Ends `beginPolicyBatch`, after the batch's commit (or rollback) returned.
    func endPolicyBatch() { objectGate.unlockShared() }

    /// The live lease `id`, if any.
    public func live(_ id: String) -> Lease? {
        let now = clocks.read()
        guard let l = state.withLock({ $0.leases[id] }), l.deadline > now.steady else { return nil }
        return l.shown(now)
    }

    /// Ends a lease; returns it, or nil if there was none (or it had lapsed).
    @discardableResult
    public func release(_ id: String) -> Lease? {
        let now = clocks.read()
        guard let l = state.withLock({ $0.remove(id) }) else { return nil }
        return l.deadline > now.steady ? l.shown(now) : nil
    }

    /// Ends every lease `holder` took (its connection closed); returns them.
    @discardableResult
    public func releaseAll(holder: UInt64) -> [Lease] {
        state.withLock { s in (s.byHolder[holder] ?? []).compactMap { s.remove($0) } }
    }

    /// Drops lapsed leases and returns them (the daemon reschedules their files' unlinks).
    /// Removed a few at a time, each hold of the lock taking out 256 paths or one lease at
    /// most: removing a path hashes it (up to 4 KiB), and a registry of leases lapsing
    /// together must not hold up every unlink's check and every connection's close meanwhile.
    /// A lapsed lease protects nothing, so one still in the index between holds is harmless.
    public func removeExpired() -> [Lease] {
        let now = clocks.steady()
        let ids = state.withLock { s in
            s.walked += s.leases.count
            return s.leases.values.filter { $0.deadline <= now }.map(\.id)
        }
        var lapsed = [Lease]()
        lapsed.reserveCapacity(ids.count)
        var next = 0
        while next < ids.count {
            state.withLock { s in
                var paths = 0
                while next < ids.count && (paths == 0 || paths + (s.leases[ids[next]]?.files.count ?? 0) <= 256) {
                    if let l = s.remove(ids[next]) {
                        lapsed.append(l)
                        paths += l.files.count
                    }
                    next += 1
                }
                s.mostRemoved = max(s.mostRemoved, paths)
            }
        }
        state.withLock { s in
            s.walked += s.leases.count
            s.earliest = s.leases.values.reduce(.infinity) { e, l in l.holder == nil ? e : min(e, l.deadline) }
        }
        return lapsed
    }

    /// The live leases, soonest to lapse first.
    public func active() -> [Lease] {
        let now = clocks.read()
        return state.withLock { s in
            s.walked += s.leases.count
            return s.leases.values.filter { $0.deadline > now.steady }
        }
        .sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) }.map { $0.shown(now) }
    }

    /// Up to `limit` live leases that `include` accepts, taken after the lease `after` (in the
    /// order they were taken), and whether more follow. Under the lock it only finds where the
    /// page starts and copies the next live leases, `limit` and one at a time, walking at most
    /// four times that many (lapsed leases not yet removed, ended ones not yet compacted) per
    /// hold; `include` runs after the lock, and asks for more only where it refused some.
    public func list(
        after: String?, limit: Int, where include: (Lease) -> Bool = { _ in true }
    ) throws(StoreError) -> (leases: [Lease], more: Bool) {
        var start: UInt64 = 0
        if let after {
            guard after.first == "L", let n = UInt64(after.dropFirst()) else {
                throw StoreError(.invalidParams, "after must be a lease, such as L1")
            }
            start = n
        }
        let now = clocks.read()
        var page = [Lease]()
        while page.count <= limit {
            let want = limit + 1 - page.count
            let (chunk, walkedTo, end) = state.withLock { s -> ([Lease], UInt64, Bool) in
                let first = s.firstAfter(start)
                let stop = min(s.order.count, first + 4 * want)
                var i = first
                var (chunk, last) = ([Lease](), start)
                while i < stop && chunk.count < want {
                    s.walked += 1
                    last = s.order[i].number
                    if let l = s.leases[s.order[i].id], l.deadline > now.steady { chunk.append(l.shown(now)) }
                    i += 1
                }
                s.mostWalked = max(s.mostWalked, i - first)
                return (chunk, last, i == s.order.count)
            }
            page += chunk.lazy.filter(include)
            if end { break }
            // The next chunk resumes by number: the order may be compacted in between.
            start = walkedTo
        }
        let more = page.count > limit
        return (Array(page.prefix(limit)), more)
    }

    /// The earliest time a live lease lapses, if any.
    public func nextExpiry() -> Double? {
        let now = clocks.read()
        return state.withLock { s in
            s.walked += s.leases.count
            return s.leases.values.lazy.map(\.deadline).filter { $0 > now.steady }.min()
        }
        .map(now.wall(atSteady:))
    }

    /// The latest expiry of the live leases covering the file at this normalised path, nil
    /// if none does: on the wall clock as it reads now (a queue row's next attempt).
    public func leasedUntil(file path: String) -> Double? {
        let now = clocks.read()
        return state.withLock { s in s.files.leasedUntil(path, now: now.steady) }.map(now.wall(atSteady:))
    }

    /// `leasedUntil` for each of `paths`, in their order, in one snapshot (a sweep's batch).
    public func leasedUntil(files paths: [String]) -> [Double?] {
        let now = clocks.read()
        return state.withLock { s in s.leasedUntil(paths[...], now: now.steady) }.map { $0.map(now.wall(atSteady:)) }
    }

    /// `leasedUntil` for each of `paths`, in their order, the lock taken for 256 of them at a
    /// time: a long list (a `pending` page, an ended lease's files; 4 KiB paths hashed) must
    /// not hold up every unlink's check and every lease's end. Not one snapshot: what acts on
    /// a file checks it again (an unlink, under the gate).
    public func leasedUntil(eachOf paths: [String]) -> [Double?] {
        let now = clocks.read()
        var until = [Double?]()
        until.reserveCapacity(paths.count)
        var start = 0
        while start < paths.count {
            let end = min(start + 256, paths.count)
            until += state.withLock { s in s.leasedUntil(paths[start..<end], now: now.steady) }
                .map { $0.map(now.wall(atSteady:)) }
            start = end
        }
        return until
    }

    /// Tests: the most paths `removeExpired` took out of the file index in one hold of the
    /// lock since the last call.
    func takeMostRemovedPerHold() -> Int {
        state.withLock { s in
            defer { s.mostRemoved = 0 }
            return s.mostRemoved
        }
    }

    /// Tests: the address of the UTF-8 bytes of the String keying `path` in the file index.
    func fileKeyAddress(_ path: String) -> UInt? { state.withLock { $0.files.keyAddress(path) } }
    /// Tests: the most leases a `list` or `snapshot` chunk walked in one hold of the lock since
    /// the last call.
    func takeMostWalkedPerHold() -> Int {
        state.withLock { s in
            defer { s.mostWalked = 0 }
            return s.mostWalked
        }
    }
    /// Tests: the most file lookups done in one hold of the lock since the last call.
    func takeMostLookupsPerHold() -> Int {
        state.withLock { s in
            defer { s.mostLookups = 0 }
            return s.mostLookups
        }
    }
    /// Tests: how many leases the file lookups looked at so far.
    var filesExamined: Int { state.withLock { $0.files.examined } }
    /// Tests: how many leases walks of every lease (active, snapshot, list, nextExpiry,
    /// removeExpired, the bounds' recount) looked at so far, under the lock.
    var leasesWalked: Int { state.withLock { $0.walked } }

    /// Runs `body` (an unlink) only if no live lease covers the file at this normalised path,
    /// holding the registry's gate shared meanwhile: a lease on it is taken either before
    /// (and `body` does not run: nil) or after `body` returned, never in between. Several
    /// threads may be inside at once; `body` must not take a lease.
    public func unlessLeased<T>(file path: String, _ body: () throws -> T) rethrows -> T? {
        try gate.shared { () throws -> T? in
            let now = clocks.steady()
            let leased = state.withLock { s in s.files.leasedUntil(path, now: now) != nil }
            return leased ? nil : try body()
        }
    }

    /// True if a live lease covers the file at this normalised path.
    public func isLeased(file path: String) -> Bool { leasedUntil(file: path) != nil }
}
