// Lease numbers: a lease's id is "L" and its number, and the numbers are reserved in the store
// (meta 'lease.last', the last number reserved) a block at a time, so that no two leases of one
// database ever share an id, across restarts too, and every lease is numbered after every lease
// of the starts before. An id saved before a restart (an admin's `lease.release {lease: "L5"}`,
// a script's `lease.list` `after`) then names no new lease, and skips none. The clock plays no
// part: a block is written and synced before its first number is handed out, and what a start
// leaves of its block is never used. The next block is reserved while a quarter of the current
// one is left, on a thread of its own, so that no acquire waits for the writer (behind a policy
// batch, a vacuum or an index rebuild) when a block runs out; an acquire reserves one itself
// only when that has not ended or failed. A backup raises the last number in its copy by far more
// than any store reserves (`backupLeaseGap`): a store started on it numbers past every lease
// its source granted after the backup.

import Foundation
import GRDB
import Synchronization

/// Where a registry takes its lease numbers from.
final class LeaseNumbers: Sendable {
    /// Numbers reserved per write of the store: one write and sync of the WAL at the open, and
    /// one per this many leases after that.
    static let block: UInt64 = 1 << 20
    /// Reserves `count` numbers in the store and returns the first; set by the store.
    let reserve = Mutex<(@Sendable (UInt64) throws -> UInt64)?>(nil)
    /// Held while a block is reserved: one write at a time, the acquires behind it use its block.
    private let reserving = Mutex(())
    /// Tests: numbers per block.
    let perBlock = Atomic<UInt64>(LeaseNumbers.block)
    /// Tests: blocks reserved while an acquire (or the open) waited, with none reserved ahead.
    let waitedFor = Atomic<Int>(0)
    /// Tests: runs when a reservation ahead has ended, reserved or not.
    let aheadDone = Mutex<(@Sendable () -> Void)?>(nil)
    /// Set under `reserving` when the store closes: no reservation ahead writes after.
    private let stopped = Atomic<Bool>(false)

    /// Makes sure `state` has a number left for a lease, reserving a block if it has none (with
    /// `through`, if given, instead of `reserve`). It may wait for the writer: called outside
    /// the gates, never on a thread inside a write transaction (GRDB would trap).
    func ensure(
        _ state: borrowing Mutex<LeaseState>, through: ((UInt64) throws -> UInt64)? = nil
    ) throws(StoreError) {
        guard !state.withLock({ $0.hasNumber }) else { return }
        try reserving.withLock { _ throws(StoreError) in
            // The acquire before us, or the reservation ahead, reserved.
            guard !state.withLock({ $0.hasNumber }) else { return }
            let count = perBlock.load(ordering: .relaxed)
            let stored = reserve.withLock { $0 }
            guard let reserve = through ?? stored.map({ f in { try f($0) } }) else {
                throw StoreError(.internalError, "the lease registry has no store to number leases from")
            }
            let first: UInt64
            do {
                first = try reserve(count)
            } catch let e as StoreError {
                throw e
            } catch {
                throw StoreError(.internalError, "cannot reserve lease numbers: \(error)")
            }
            state.withLock { s in (s.next, s.end) = (first, first + count) }
            waitedFor.add(1, ordering: .relaxed)
        }
    }

    /// Reserves the block after the current one, if none is yet. A failure is left to the
    /// acquire that finds the block used up, which then reserves one itself (or answers why not).
    func reserveSpare(_ state: borrowing Mutex<LeaseState>) {
        reserving.withLock { _ in
            guard !stopped.load(ordering: .relaxed), state.withLock({ $0.spare == nil }) else { return }
            let count = perBlock.load(ordering: .relaxed)
            guard let reserve = reserve.withLock({ $0 }), let first = try? reserve(count) else { return }
            state.withLock { $0.spare = (first, first + count) }
        }
        aheadDone.withLock { $0 }?()
    }

    /// At the store's close: waits for a reservation ahead under way, and starts none after.
    func stop() { reserving.withLock { _ in stopped.store(true, ordering: .relaxed) } }
}

extension LeaseRegistry {
    /// Reserves the next block of lease numbers on a thread of its own (an acquire left a
    /// quarter of the current one).
    func reserveAhead() {
        DispatchQueue.global(qos: .utility).async { [weak self] in
            guard let self else { return }
            numbers.reserveSpare(state)
        }
    }
}

extension Store {
    /// The last lease number reserved so far (0: none).
    static let leaseNumbersKey = "lease.last"
    /// What a backup adds to the last lease number in its copy: 2^30 starts of a block each
    /// (2^20) would not reach it, and 2^13 generations of backups of backups fit in an Int64.
    static let backupLeaseGap: Int64 = 1 << 50

    /// Reserves `count` lease numbers after every number reserved before, durably (the WAL
    /// synced whatever `store.durability` says: a number handed out and then lost to a crash
    /// would be handed out again), and returns the first. Refused on a read-only store, which
    /// grants no leases. On a full disk it commits through the reserve (a lease may be what
    /// keeps a client from re-creating files, and the write is a page), unless `reserveToo`
    /// is false.
    func reserveLeaseNumbers(_ count: UInt64, reserveToo: Bool = true) throws -> UInt64 {
        try checkWritable()
        let write = {
            try Store.mapErrors {
                try self.pool.write { db -> UInt64 in
                    let last =
                        try Int64.fetchOne(
                            db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.leaseNumbersKey]) ?? 0
                    guard last >= 0, count < UInt64(Int64.max - last) else {
                        throw StoreError(.internalError, "the store has used up its lease numbers")
                    }
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        arguments: [Store.leaseNumbersKey, last + Int64(count)])
                    return UInt64(last) + 1
                }
            }
        }
        let first = try reserveToo ? freeingSpace("the lease numbers", write) : write()
        try syncWAL(force: true)
        return first
    }

    /// At a writable open, so that no lease waits for the writer to be numbered until a block
    /// runs out. `early`: before a WAL the last run left is written back, if the schema keeps
    /// the numbers yet: the write-back takes the reservation with it and the WAL starts empty.
    /// Not through the reserve, and silent on a full disk: the write-back would take what the
    /// reserve gave back. Else (or if that failed) after the upgrade that adds them, through
    /// the reserve; if even that meets a full disk, the open warns and the first lease tries
    /// again.
    func reserveLeaseNumbersAtOpen(early: Bool) throws {
        if early {
            let kept = try Store.mapErrors {
                try pool.read { db in
                    try db.tableExists("meta")
                        && Int64.fetchOne(
                            db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.leaseNumbersKey]) != nil
                }
            }
            guard kept else { return }
        }
        do {
            try leases.reserveNumbers(through: early ? { try self.reserveLeaseNumbers($0, reserveToo: false) } : nil)
        } catch {
            guard error.code == .storageFull else { throw error }
            if early { return }  // tried again after the upgrade
            let warning =
                "the disk holding \(path) is full, its reserve gone: lease numbers not reserved at start;"
                + " a lease answers storage_full until there is room"
            state.withLock { $0.openWarnings.append(warning) }
        }
    }

    /// Lets the registry number its leases from the store (weakly: the store owns it).
    func numberLeases() {
        leases.numbers.reserve.withLock {
            $0 = { [weak self] count in
                guard let self else { throw StoreError(.internalError, "the store is closed") }
                return try self.reserveLeaseNumbers(count)
            }
        }
    }
}
