// The engine side of each workload: an AssetStore `Store` with its defaults (durability
// full, WAL), one managed root, objects in collection "assets" whose value names one file
// and an owner; each call here is what a client of the library would write.

import AssetStore
import Foundation
import Synchronization

/// A store under test and the calls the workloads time.
final class EngineSide {
    let store: Store
    /// The store's clock: wall time, or a fixed time while `at` runs.
    private let clock: SteppedClock

    /// Opens a store at `database` managing the files below `root`.
    init(database: String, root: String) throws {
        var configuration = StoreConfiguration(roots: [root])
        let clock = SteppedClock()
        configuration.clock = { clock.now }
        self.clock = clock
        store = try Store(path: database, configuration: configuration)
    }

    /// Runs `body` with the store's clock stopped at `time` (Unix seconds). Deletes run at
    /// time t queue unlinks due at t, so a sweep at t takes exactly those: the sweep workload
    /// uses this to sweep one batch at a time, alternating with the baseline.
    func at<T>(_ time: Double, _ body: () throws -> T) rethrows -> T {
        clock.set(time)
        defer { clock.set(nil) }
        return try body()
    }

    /// Closes the store.
    func close() { store.close() }

    /// Puts objects `range` in one write transaction; object i holds `path(i)`.
    func put(_ range: Range<Int>, keys: [String], owners: [String], path: (Int) -> String) throws {
        try store.write { tx in
            for i in range {
                let value: JSONValue = .object(["file": .string(path(i)), "owner": .string(owners[i % owners.count])])
                try tx.put(ObjectRef(Bench.collection, keys[i]), value: value)
            }
        }
    }

    /// One point get (`Store.get`, a snapshot of its own); returns how many files the object
    /// holds.
    func get(_ key: String) throws -> Int? {
        try store.get(ObjectRef(Bench.collection, key))?.files.count
    }

    /// The same get inside a read transaction, as a caller reading several things on one
    /// snapshot writes it.
    func getInRead(_ key: String) throws -> Int? {
        try store.read { r in try r.get(ObjectRef(Bench.collection, key)) }?.files.count
    }

    /// The 100 largest objects of `owner`, as rows holding their keys (the baseline returns
    /// its rows as they come, too).
    func top100(owner: String) throws -> [IndexRow] {
        try store.query(clause: "WHERE owner = ? ORDER BY size DESC LIMIT 100", parameters: [.string(owner)])
    }

    /// Bytes per owner, summed over all owners.
    func sumByOwner() throws -> (groups: Int, total: Int64) {
        guard case .rows(let rows) = try store.aggregate(function: "SUM(size)", groupBy: ["owner"]) else {
            throw BenchError("aggregate with group_by returned no rows")
        }
        return (rows.count, rows.reduce(0) { $0 + ($1["value"]?.intValue ?? 0) })
    }

    /// Deletes objects `range` in one write transaction; returns the files it queued.
    func delete(_ range: Range<Int>, keys: [String]) throws -> Int {
        try store.write { tx in
            for i in range { try tx.delete(ObjectRef(Bench.collection, keys[i])) }
        }.report.filesQueued.count
    }

    /// Runs the unlink queue; returns the files removed.
    func sweep() throws -> Int { try store.sweep().unlinked.count }

    /// Objects in the store.
    func objectCount() throws -> Int { try store.read { try $0.objectCount() } }
}

/// Wall time, unless set to a fixed time.
final class SteppedClock: Sendable {
    private let fixed = Mutex<Double?>(nil)

    /// The fixed time if set, else the wall clock (Unix seconds).
    var now: Double { fixed.withLock { $0 } ?? Date().timeIntervalSince1970 }

    /// Fixes the time, or with nil lets it run again.
    func set(_ time: Double?) { fixed.withLock { $0 = time } }
}
