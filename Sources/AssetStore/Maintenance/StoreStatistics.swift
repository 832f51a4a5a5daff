// Counts for `stats`: objects, registered files and bytes, bytes per owner, the unlink queue
// and the lifetime unlink counters, read on one snapshot.

import GRDB
import JSON

/// What `stats` reports about the store.
public struct StoreStatistics: Sendable {
    /// Objects.
    public var objects: Int
    /// Registered files.
    public var files: Int
    /// Bytes of all registered files, each counted once (a file with several names too).
    public var bytes: Int64
    /// Bytes per owner, each owner apart as the database tells owners apart (by the bytes of
    /// the name), in that order: each file counts once toward each owner holding it.
    public var owners: [OwnerBytes]
    /// Queued unlinks.
    public var pendingUnlinks: Int
    /// Queued unlinks that failed at least once.
    public var failedUnlinks: Int
    /// Lifetime counters (unlinked, skipped_identity_changed, skipped_unsafe_path, unlink_failures,
    /// deferred_open, deferred_open_undetermined, deferred_leased).
    public var counters: [String: Int64]
    /// The latest commit.
    public var commit: Int64
    /// The write-ahead log and its checkpoints.
    public var wal: WALStatus
    /// Access times in memory (Store+Access.swift): pending, flushes, flushed, touches.
    public var access: [String: Int64] = [:]
    /// Caps on a `min_free` out of reach in effect now (MinFreeCap.swift).
    public var minFreeCaps: [MinFreeCap] = []

    /// Bytes per owner by name, but for owners whose names are canonically equivalent
    /// (`café` and `cafe` + U+0301): a String key would be one entry for two owners, so
    /// they are only in `owners`.
    public var bytesPerOwner: [String: Int64] {
        var map = [String: Int64](minimumCapacity: owners.count)
        var alike = Set<String>()
        for o in owners where map.updateValue(o.bytes, forKey: o.owner) != nil { alike.insert(o.owner) }
        for name in alike { map[name] = nil }
        return map
    }

    /// As the protocol shows it; `min_free_caps`, by root, only while there are any.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "objects": .int(Int64(objects)), "files": .int(Int64(files)), "bytes": .int(bytes),
            "bytes_per_owner": .object(bytesPerOwner.mapValues(JSONValue.int)),
            "owners": .array(owners.map { ["owner": .string($0.owner), "bytes": .int($0.bytes)] }),
            "pending_unlinks": .int(Int64(pendingUnlinks)), "failed_unlinks": .int(Int64(failedUnlinks)),
            "counters": .object(counters.mapValues(JSONValue.int)), "commit": .int(commit),
            "wal": wal.json, "access": .object(access.mapValues(JSONValue.int)),
        ]
        if !minFreeCaps.isEmpty {
            o["min_free_caps"] = .object(
                Dictionary(minFreeCaps.map { ($0.root, $0.json) }, uniquingKeysWith: { a, _ in a }))
        }
        return .object(o)
    }
}

/// One owner's bytes in `stats`.
public struct OwnerBytes: Sendable, Equatable {
    /// The owner's name.
    public var owner: String
    /// Bytes of the files its objects hold, each file once.
    public var bytes: Int64

    public init(owner: String, bytes: Int64) { (self.owner, self.bytes) = (owner, bytes) }
}

/// The write-ahead log as this process sees it. A WAL that keeps growing means checkpoints
/// fail or a long read keeps its frames.
public struct WALStatus: Sendable {
    /// Frames (pages) in the WAL after the latest commit of this process.
    public var frames: Int
    /// Background checkpoints run since the store was opened.
    public var checkpoints: Int
    /// Checkpoints that failed with an error since the store was opened.
    public var checkpointFailures: Int
    /// The store's own fdatasyncs of the WAL since it was opened, each making every commit
    /// before it durable (group commit: one may cover several commits); not SQLite's syncs in
    /// checkpoints.
    public var syncs: Int = 0
    /// The latest failure's message.
    public var lastCheckpointError: String?
    /// Why a sync of the WAL or the database file failed, if one has: writes are refused
    /// until a restart.
    public var syncFailure: String?
    /// Whether the writer combines each commit's WAL writes (`store.coalesce_wal`).
    public var coalescing = true
    /// Why not, when it does not.
    public var coalescingOffReason: String?

    /// As the protocol shows it.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "frames": .int(Int64(frames)), "checkpoints": .int(Int64(checkpoints)),
            "checkpoint_failures": .int(Int64(checkpointFailures)), "coalescing": .bool(coalescing),
            "syncs": .int(Int64(syncs)),
        ]
        if let coalescingOffReason { o["coalescing_off_reason"] = .string(coalescingOffReason) }
        if let lastCheckpointError { o["last_checkpoint_error"] = .string(lastCheckpointError) }
        if let syncFailure { o["sync_failure"] = .string(syncFailure) }
        return .object(o)
    }
}

extension Store {
    /// Current counts, from one snapshot.
    public func statistics() throws -> StoreStatistics {
        let counters = try counters()
        return try read { r in
            let db = r.db
            // Sums as doubles, less what names of one file count beyond it (only shared
            // identities' rows are read: the joins are ordered, as SQLite has no statistics
            // to tell the list is short), clamped once: a huge owner does not read 0.
            // Keyed by the name's bytes, as SQLite groups them: by String, canonically
            // equivalent names of two owners would be summed into one.
            var perOwner = [UTF8Key: Double]()
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT o.owner, TOTAL(f.size) FROM (SELECT DISTINCT o.owner AS owner, e.dst AS dst
                        FROM object o JOIN edge e ON e.src = o.id AND e.is_file = 1) o
                    JOIN file f ON f.id = o.dst GROUP BY o.owner
                    """)
            {
                perOwner[UTF8Key(row[0]), default: 0] += row[1] as Double
            }
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT owner, TOTAL(x) FROM (SELECT owner, TOTAL(size) - MAX(size) AS x FROM (
                        SELECT DISTINCT o.owner AS owner, f.id, f.size AS size, \(SharedFiles.identity("f"))
                        FROM file_shared s CROSS JOIN file f ON f.inode = s.inode AND f.device = s.device
                        CROSS JOIN edge e ON e.is_file = 1 AND e.dst = f.id CROSS JOIN object o ON o.id = e.src) AS h
                        GROUP BY owner, \(SharedFiles.identity("h")))
                    GROUP BY owner
                    """)
            {
                let owner: String = row[0]
                perOwner[UTF8Key(owner), default: 0] -= row[1] as Double
            }
            return StoreStatistics(
                objects: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") ?? 0,
                files: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM file") ?? 0,
                bytes: try Int64.fetchOne(db, sql: Sizes.registered) ?? 0,
                owners: perOwner.map { name, bytes in
                    OwnerBytes(owner: name.string, bytes: bytes >= 0x1p63 ? Int64.max : Int64(max(0, bytes)))
                }.sorted { $0.owner.utf8.lexicographicallyPrecedes($1.owner.utf8) },
                pendingUnlinks: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unlink_queue") ?? 0,
                failedUnlinks: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unlink_queue WHERE attempts > 0") ?? 0,
                counters: counters, commit: try r.lastCommit(), wal: walStatus, access: accessStatistics,
                minFreeCaps: minFreeCaps)
        }
    }

    /// The WAL's size and this process's checkpoints (atomics: no database read).
    public var walStatus: WALStatus {
        WALStatus(
            frames: Int(checkpointer.lastFrames.load(ordering: .relaxed)),
            checkpoints: checkpointer.completed.load(ordering: .relaxed),
            checkpointFailures: checkpointer.failures.load(ordering: .acquiring),
            syncs: walSyncs.load(ordering: .relaxed),
            lastCheckpointError: checkpointer.lastFailureMessage, syncFailure: syncFailure,
            coalescing: walCoalescing.active, coalescingOffReason: walCoalescing.reason)
    }

    /// Writes the WAL back into the database file and empties it (on shutdown and by
    /// `checkpoint`); false if a reader of another process kept some of it (SQLite waits for
    /// it up to the busy timeout). On a read-only store it is `busy`, as vacuum: SQLite's own
    /// error would read as an I/O error.
    @discardableResult
    public func checkpoint() throws -> Bool {
        try checkNotReadOnly()  // not checkOpen: `close` runs it after marking the store closed
        return try checkpointing("checkpoint") { db in try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") == 0
        }
    }
}
