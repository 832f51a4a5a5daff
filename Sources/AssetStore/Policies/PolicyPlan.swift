// What a policy run deletes (policy.enforce in assetd(8), CONTROL PROTOCOL, Methods): each
// object with why and the bytes its deletion really frees, the files that go, and the
// total. A dry run returns the plan and changes nothing; the real run of an unchanged store
// deletes exactly the same plan.

import JSON

/// Why a policy deletes an object.
public enum EvictionReason: String, Sendable, Hashable {
    /// Over the byte budget (`max_bytes`), least recently accessed first.
    case budget
    /// Its owner is over quota.
    case quota
    /// Its managed root's filesystem has less than `min_free` free.
    case minFree = "min_free"
    /// Not accessed for longer than a TTL's `max_idle` (or `expire --idle`).
    case idle
    /// Created longer ago than a TTL's `max_age` (or `expire --older-than`).
    case age
    /// `policy.evict` asked for bytes.
    case evict
    /// A rule deleted it because a policy deleted another object.
    case cascade
}

/// One object a policy deletes.
public struct PlannedDeletion: Sendable, Hashable {
    /// Which object.
    public var ref: ObjectRef
    /// Why.
    public var reason: EvictionReason
    /// Bytes of the files that go with it (a file shared with a survivor counts nothing).
    public var bytes: Int64
    /// Why the order chose it, for people ("lru: least recently accessed").
    public var detail: String?

    public init(ref: ObjectRef, reason: EvictionReason, bytes: Int64, detail: String? = nil) {
        self.ref = ref
        self.reason = reason
        self.bytes = bytes
        self.detail = detail
    }

    /// `{collection, key, reason, bytes}`, and `detail` when there is one.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "collection": .string(ref.collection), "key": .string(ref.key), "reason": .string(reason.rawValue),
            "bytes": .int(bytes),
        ]
        if let detail { o["detail"] = .string(detail) }
        return .object(o)
    }
}

/// How far a policy run has got.
public struct PolicyProgress: Sendable {
    /// The step running: `ttl`, `quota`, `budget`, `min_free`, `evict`, `expire`.
    public var phase: String
    /// Objects deleted (or planned) so far.
    public var deleted: Int
    /// Bytes freed (or planned) so far.
    public var bytes: Int64
}

/// The outcome of a policy run, or its plan.
public struct PolicyPlan: Sendable {
    /// Objects deleted, in order.
    public var objects: [PlannedDeletion] = []
    /// Files queued for unlinking, in order.
    public var files: [String] = []
    /// Their bytes.
    public var bytes: Int64 = 0
    /// True if nothing was changed.
    public var dryRun: Bool
    /// A dry run stopped at its batches' limit: a real run may delete more than it shows.
    public var truncated = false
    /// The commits of a real run, one per batch that committed (for events): a batch that
    /// deleted nothing commits when it recorded the unlinks done beside it, or placed objects
    /// in an order's queues.
    public var commits: [CommitReport] = []
    /// Objects the run reached and passed over, by why (each counted once).
    public var skipped: [SkipReason: Int] = [:]
    /// Deletions whose rules reached more than a batch's work budget (rules cannot be split):
    /// each went whole, as the first deletion of its transaction, or, in an S3-FIFO or SIEVE
    /// queue, whenever the order came to it.
    public var oversized = 0
    /// The object whose deletion was the first of `oversized` (for the log).
    public var firstOversized: ObjectRef?
    /// What the unlinks done beside a real run's batches came to (for events), if it did any:
    /// the files of every batch but the last, once its commit was durable.
    public var sweep: SweepReport?

    /// The floors the `min_free` steps applied in place of one out of reach (MinFreeCap.swift).
    public var minFreeCaps: [MinFreeCap] = []
    /// A real run that deleted nothing because a restore's hold lasts (Store+Restore.swift).
    public var heldByRestore = false

    public init(dryRun: Bool) { self.dryRun = dryRun }

    /// `{objects, files, bytes, dry_run, skipped}`, plus `commit` (the last) after a real run,
    /// `truncated` after a dry run cut short, `oversized` when there were any and
    /// `min_free_caps` when a floor was out of reach.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "objects": .array(objects.map(\.json)), "files": .array(files.map(JSONValue.string)),
            "bytes": .int(bytes), "dry_run": .bool(dryRun),
            "skipped": .object(
                Dictionary(uniqueKeysWithValues: skipped.map { ($0.key.rawValue, JSONValue.int(Int64($0.value))) })),
        ]
        if let last = commits.last { o["commit"] = .int(last.commit) }
        if truncated { o["truncated"] = true }
        if oversized > 0 { o["oversized"] = .int(Int64(oversized)) }
        if !minFreeCaps.isEmpty { o["min_free_caps"] = .array(minFreeCaps.map(\.json)) }
        if heldByRestore { o["held_by_restore"] = true }
        return .object(o)
    }
}

/// A real run that failed after some of its batches had committed: they stand (their
/// objects are gone and their files queued), so the caller still learns what they did.
public struct PolicyRunFailure: Error, Sendable {
    /// What the committed batches did (`commits` holds their reports).
    public var completed: PolicyPlan
    /// Why the next batch failed.
    public var underlying: any Error

    public init(completed: PolicyPlan, underlying: any Error) {
        self.completed = completed
        self.underlying = underlying
    }
}

extension PolicyPlan {
    /// Where a plan stood before a batch. A batch that rolls back returns the plan here; a
    /// copy of the plan would do the same, but the batch's first append would then copy every
    /// earlier batch's entries, which made a long run quadratic.
    struct Mark {
        let objects: Int
        let files: Int
        let bytes: Int64
        let commits: Int
        let skipped: [SkipReason: Int]
        let oversized: Int
        let firstOversized: ObjectRef?
        let sweep: SweepReport?
    }

    var mark: Mark {
        Mark(
            objects: objects.count, files: files.count, bytes: bytes, commits: commits.count, skipped: skipped,
            oversized: oversized, firstOversized: firstOversized, sweep: sweep)
    }

    /// Drops what was added since `mark` (entries are only ever appended during a run).
    mutating func rollBack(to mark: Mark) {
        objects.removeSubrange(mark.objects...)
        files.removeSubrange(mark.files...)
        bytes = mark.bytes
        commits.removeSubrange(mark.commits...)
        skipped = mark.skipped
        oversized = mark.oversized
        firstOversized = mark.firstOversized
        sweep = mark.sweep
    }
}
