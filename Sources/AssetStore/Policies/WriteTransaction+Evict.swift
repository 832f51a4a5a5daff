// Policy deletions inside the write transaction: a group of objects is deleted and its rules
// run in a savepoint, and the whole group is undone (SQL and every piece of flush state) if
// what it would delete is protected — a pin, a lease, the grace age, a deny edge — so a
// policy never removes more than it may, and the planner learns exactly what goes. A group
// the set-based delete can take is judged before it changes anything, and needs no savepoint.

import GRDB

/// An object deleted in this transaction, with what protects it.
struct DeletedDetail {
    var id: Int64
    var ref: ObjectRef
    var owner: String
    var pinned: Bool
    var created: Double
}

/// A file queued for unlinking in this transaction.
struct QueuedDetail {
    var path: String
    var size: Int64
    var device: Int64?
}

/// What one accepted group of policy deletions did.
struct EvictionEffect {
    /// Every object deleted, the requested ones first, then cascades.
    var deleted: [DeletedDetail]
    /// Files queued for unlinking.
    var files: [QueuedDetail]
    /// Every edge removed, in order (to attribute files to the objects that held them).
    var edgesRemoved: [RemovedEdge]
    /// For each of `files`, the position in `deleted` of the object whose edge to it came
    /// first in `edgesRemoved`, when the deletion knew it (the set-based path).
    var holders: [Int]? = nil
}

/// What a policy may not delete.
struct EvictionGuard {
    /// Objects not created before this are too young.
    var oldEnough: AgeCutoff
    /// Leased objects, by their bytes (as the rows are): ask `leases(_:)`.
    var objects: Set<ObjectRefKey>
    /// Leased files, as UTF-8 bytes.
    var files: Set<[UInt8]>
    /// Refuse a deletion that reaches no file at all (a byte target gains nothing from it).
    var needsFiles = false

    func protects(_ d: DeletedDetail) -> Bool { protection(of: d) != nil }

    /// Whether a live lease names exactly this row's collection and key.
    func leases(_ ref: ObjectRef) -> Bool { objects.contains(ObjectRefKey(ref)) }

    /// Why `d` may not go, if it may not.
    func protection(of d: DeletedDetail) -> SkipReason? {
        if d.pinned { return .pinned }
        if !oldEnough.isOld(d.created) { return .tooYoung }
        if leases(d.ref) { return .leased }
        return nil
    }
}

/// Why a policy passed over an object (a plan counts them: `skipped`).
public enum SkipReason: String, Sendable, Hashable, CaseIterable {
    /// Younger than `min_age`.
    case tooYoung = "too_young"
    case pinned
    /// It, or a file it holds, is leased.
    case leased
    /// A deny edge would refuse its deletion.
    case deny
    /// Its file is also held by an object that may not go.
    case sharedFile = "shared_file"
    /// It holds no file, so deleting it frees no bytes.
    case noFile = "no_file"
}

private struct EvictionRefused: Error { var reason: SkipReason }

/// The work one group of policy deletions may do, and what it did: its objects, the edges
/// removed and files freed with them, and everything their rules reach (PolicyRun's budget).
struct EvictionBudget {
    /// Undo the group, as if refused, once it would do more than this; nil: no bound.
    var limit: Int?
    /// The work done, whether the group stood, was refused or was undone.
    var spent = 0
    /// True when the group was undone for going past `limit` (not a refusal: it may go later).
    var exceeded = false
}

extension WriteTransaction {
    /// Deletes `ids` (cause `policy`) and runs their rules now. Returns what went, or nil —
    /// with nothing changed — if anything that would go is protected, or a deny edge would
    /// refuse it at commit. Call only with no other recorded intent pending.
    func evict(_ ids: [Int64], guard protection: EvictionGuard) throws -> EvictionEffect? {
        var refusal: SkipReason?
        return try evict(ids, guard: protection, refusal: &refusal)
    }

    /// `evict`, saying why it refused. `known` may hold some of the objects' rows as read
    /// earlier in this transaction (`PolicyRun.candidates`), which the deletion then trusts.
    func evict(
        _ ids: [Int64], guard protection: EvictionGuard, refusal: inout SkipReason?,
        known: [Int64: DeletedDetail] = [:]
    ) throws -> EvictionEffect? {
        var budget = EvictionBudget()
        return try evict(ids, guard: protection, refusal: &refusal, known: known, budget: &budget)
    }

    /// `evict` within a budget: a group that would go past `budget.limit` is undone (and
    /// `budget.exceeded` set) as soon as its work does, before its rules run to the end.
    func evict(
        _ ids: [Int64], guard protection: EvictionGuard, refusal: inout SkipReason?,
        known: [Int64: DeletedDetail] = [:], budget: inout EvictionBudget
    ) throws -> EvictionEffect? {
        precondition(pendingDeletes.isEmpty && dirty.isEmpty && unresolved.isEmpty, "evict with pending intent")
        // A failure left half done stays fatal: the worklist's rollback below must not clear it.
        if let failed = flushFailure { throw failed }
        let marks = (
            deleted: deletedDetails.count, queued: queuedDetails.count, deny: denyChecks.count,
            edges: report.edgesRemoved.count
        )
        // A batch the set-based path can take is judged on what it read, before any change,
        // so the common case needs no savepoint (whose journal copies every page it changes).
        if let batch = try planReferenceCounted(ids, known: known) {
            let work = batch.ids.count + batch.outgoing.values.reduce(0) { $0 + $1.count } + batch.freed.count
            if let limit = budget.limit, work > limit {
                budget.spent = work  // it read every one of those rows
                budget.exceeded = true
                return nil
            }
            budget.spent = work
            if let why = refusalBeforeDeleting(batch, protection) {
                refusal = why
                return nil
            }
            let holders: [Int]
            do {
                holders = try deleteReferenceCounted(batch)
            } catch {
                // Partly done, with no savepoint to undo it: the transaction can only roll back.
                flushFailure = error
                throw error
            }
            return EvictionEffect(
                deleted: Array(deletedDetails[marks.deleted...]), files: Array(queuedDetails[marks.queued...]),
                edgesRemoved: Array(report.edgesRemoved[marks.edges...]), holders: holders)
        }
        let saved = (
            work, indexDirty, accessDirty, filesTouched, deletedFiles, deletedIDs, denyChecks, notifyCandidates,
            nullifyCursor,
            report, deletedDetails, queuedDetails, removedWithReason, inserted
        )
        try Store.checkNotRolledBack(db)
        (ruleWorkLimit, ruleWorkDone) = (budget.limit, 0)
        defer {
            budget.spent = ruleWorkDone
            ruleWorkLimit = nil
        }
        do {
            try db.inSavepoint {
                for id in ids where !deletedIDs.contains(id) && pendingDeleteIDs.insert(id).inserted {
                    pendingDeletes.append((id, .policy, nil))
                }
                try flush()
                if let why = deletedDetails[marks.deleted...].lazy.compactMap(protection.protection(of:)).first {
                    throw EvictionRefused(reason: why)
                }
                if !protection.files.isEmpty,
                    queuedDetails[marks.queued...].contains(where: { protection.files.contains(Array($0.path.utf8)) })
                {
                    throw EvictionRefused(reason: .leased)
                }
                if try queuesFileOfProtectedSurvivor(since: marks, protection) {
                    throw EvictionRefused(reason: .sharedFile)
                }
                if protection.needsFiles,
                    !report.edgesRemoved[marks.edges...].contains(where: {
                        if case .file = $0.edge.destination { return true } else { return false }
                    })
                {
                    throw EvictionRefused(reason: .noFile)
                }
                // Deny is settled at commit against the final state; a policy settles it now,
                // conservatively: the other end must be gone already.
                for check in denyChecks[marks.deny...] where !deletedIDs.contains(check.otherEnd) {
                    if try Bool.fetchOne(
                        db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM object WHERE id = ?)"),
                        arguments: [check.otherEnd]) ?? false
                    {
                        throw EvictionRefused(reason: .deny)
                    }
                }
                return .commit
            }
        } catch {
            (
                work, indexDirty, accessDirty, filesTouched, deletedFiles, deletedIDs, denyChecks, notifyCandidates,
                nullifyCursor,
                report, deletedDetails, queuedDetails, removedWithReason, inserted
            ) = saved
            pendingDeletes = []
            pendingDeleteIDs = []
            flushFailure = nil
            if let r = error as? EvictionRefused {
                refusal = r.reason
                return nil
            }
            if error is RuleWorkLimitReached {
                budget.exceeded = true
                return nil
            }
            throw error
        }
        return EvictionEffect(
            deleted: Array(deletedDetails[marks.deleted...]), files: Array(queuedDetails[marks.queued...]),
            edgesRemoved: Array(report.edgesRemoved[marks.edges...]))
    }

    /// Why `batch` may not go, as the checks after a deletion would find: the same reasons in
    /// the same order. It removes only its objects' own edges (no file of a surviving holder
    /// goes, no deny edge is among them), and every edge it removes reaches a file.
    private func refusalBeforeDeleting(_ batch: ReferenceCountedBatch, _ protection: EvictionGuard) -> SkipReason? {
        for id in batch.ids {
            if let why = protection.protection(of: batch.details[id]!) { return why }  // planned: all found
        }
        if !protection.files.isEmpty, batch.queuedPaths.contains(where: { protection.files.contains(Array($0.utf8)) }) {
            return .leased
        }
        if protection.needsFiles && batch.outgoing.isEmpty { return .noFile }
        return nil
    }

    /// True if a file queued since `marks` was retained (deleteDestinationIfAllSourcesDeleted: the
    /// object owns it) by an object that survives and is itself protected (pinned, leased, too
    /// young): a rule of a deleted object (deleteDestinationIfSourceDeleted) would take the file
    /// from under it, and files under a pin or a lease are never evicted (assetd(8), DATA MODEL,
    /// Lifecycle policies). A weak edge does not keep a file, so it does not protect one either.
    private func queuesFileOfProtectedSurvivor(
        since marks: (deleted: Int, queued: Int, deny: Int, edges: Int), _ protection: EvictionGuard
    ) throws -> Bool {
        let queued = Set(queuedDetails[marks.queued...].map { UTF8Key($0.path) })
        guard !queued.isEmpty else { return false }
        // The sources of edges removed since `marks` either went in this group or survive. As
        // bytes: ObjectRef's equality is String's, under which other keys can be equal.
        let deleted = Set(deletedDetails[marks.deleted...].map { ObjectRefKey($0.ref) })
        var seen = Set<ObjectRefKey>()
        for r in report.edgesRemoved[marks.edges...] {
            guard case .file(let path) = r.edge.destination,
                r.edge.rules.contains(.deleteDestinationIfAllSourcesDeleted),
                !deleted.contains(ObjectRefKey(r.edge.source)), queued.contains(UTF8Key(path)),
                seen.insert(ObjectRefKey(r.edge.source)).inserted,
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT id, pinned, created, owner FROM object WHERE collection = ? AND key = ?"),
                    arguments: [r.edge.source.collection, r.edge.source.key])
            else { continue }
            let holder = DeletedDetail(id: row[0], ref: r.edge.source, owner: row[3], pinned: row[1], created: row[2])
            if protection.protects(holder) { return true }
        }
        return false
    }
}
