// `verify` (assetd(8), CONTROL PROTOCOL, Methods; assetctl(1), COMMANDS): checks the store
// against itself and the disk, phase by phase, and with `repair` fixes what it can. Every scan
// reads one bounded page per read transaction and every repair is a write transaction of at most
// one page, re-checked under the write lock, so a large store is never held in memory nor its
// writer stalled for the whole run.

import GRDB
import Glibc
import JSON

/// What `verify` checks and may change.
public struct VerifyOptions: Sendable {
    /// Fix what can be fixed (missing files, unreferenced registry rows, dangling edges, indexes,
    /// shared files not listed).
    public var repair = false
    /// Also look for orphans: files under the roots that nothing registers.
    public var orphans = false
    /// Unlink the orphans found (implies `orphans`); each one removed counts as repaired.
    public var deleteOrphans = false
    /// Delete orphans even under a root without assetd's CACHEDIR.TAG.
    public var force = false
    /// With `deleteOrphans` after a restore: delete the files changed since the backup too,
    /// ending the restore's hold on them (Store+Restore.swift).
    public var sinceBackup = false
    /// With `repair`, a configured root: below it, record the file now at a registered path
    /// as the registered one where it is not, if its size and mtime are the registered ones
    /// (a root moved by copying; `WriteTransaction.relearnFile`).
    public var relearn: String?
    /// Seconds since queueing after which a failing unlink is a problem.
    public var failingFor: Double = 86_400
    /// Problems listed in the report at most; the rest are only counted (a broken large
    /// store must not turn into a reply of millions of lines).
    public var limit = 10_000

    /// Report only, no orphans.
    public init() {}
}

/// One thing `verify` found.
public struct VerifyProblem: Sendable {
    /// `missing_file`, `identity_changed` (not the file registered), `root_identity_changed`
    /// (most of a root's files so: copied?), `root_unconfigured` (files below no configured
    /// root), `unreferenced_file`, `dangling_edge`, `index_mismatch`, `unlisted_shared_file`,
    /// `unlink_failing`, `orphan`, `root_moved` (a root not walked: not its pinned folder) or
    /// `root_missing` (a root that is not there: its files not checked).
    public var kind: String
    /// What it is about: `{collection, key, path}`, `{path}`, `{index}`, an edge.
    public var subject: JSONValue
    /// A sentence for people, saying what the repair did if it ran.
    public var message: String
    /// True when the repair fixed it.
    public var repaired: Bool
    /// `{kind, subject, message, repaired}`.
    public var json: JSONValue {
        .object(["kind": .string(kind), "subject": subject, "message": .string(message), "repaired": .bool(repaired)])
    }
}

/// How far `verify` got, once per page of each phase.
public struct VerifyProgress: Sendable {
    /// `dangling_edges`, `missing_files`, `unreferenced_files`, `indexes`, `shared_files`,
    /// `unlink_queue`, `orphans`.
    public var phase: String
    /// Rows (or, for orphans, files) looked at so far in this phase.
    public var done: Int
    /// How many there are, when known.
    public var total: Int?
}

/// What `verify` found and did.
public struct VerifyReport: Sendable {
    /// The problems, at most `VerifyOptions.limit` of them.
    public var problems: [VerifyProblem]
    /// Problems found, listed or not.
    public var found: Int
    /// Problems repaired, listed or not.
    public var repaired: Int
    /// True when nothing was found or everything found was repaired (exit 0).
    public var clean: Bool
    /// What the repairs committed, merged over their transactions (`commit` is the last
    /// one's number); nil if nothing was written.
    public var commit: CommitReport?
    /// `{problems: […], found, repaired, clean}`.
    public var json: JSONValue {
        .object([
            "problems": .array(problems.map(\.json)), "found": .int(Int64(found)),
            "repaired": .int(Int64(repaired)), "clean": .bool(clean),
        ])
    }
}

extension Store {
    /// Rows per scan page and per repair transaction.
    static let verifyPage = 1000

    /// Checks the store (verify in assetd(8), CONTROL PROTOCOL, Methods). A repair on a read-only
    /// store is `busy`, as any write.
    public func verify(
        _ options: VerifyOptions, progress: (@Sendable (VerifyProgress) -> Void)? = nil
    ) throws -> VerifyReport {
        try checkOpen()
        if options.repair || options.deleteOrphans { try checkWritable() }
        if options.deleteOrphans { try checkNotCopy("orphan deletion") }
        if let root = options.relearn {
            guard options.repair else { throw StoreError(.invalidParams, "relearn goes with repair") }
            guard roots.paths.contains(root) else {
                throw StoreError(.invalidParams, "relearn names \(root), which is not a configured root")
            }
            try checkNotCopy("relearn")
        }
        // Before any phase: a refused run changes nothing.
        if options.deleteOrphans && !options.force { try checkOrphanConsent() }
        // Not even with force: a root not bound, or bound by another daemon since, may hold another
        // database's files (Store+RootBinding.swift).
        if options.deleteOrphans, let why = orphanDeletionBar() {
            throw StoreError(.conflict, why, detail: ["root_binding": "unbound"])
        }
        let run = VerifyRun(store: self, options: options, progress: progress)
        try run.danglingEdges()
        try run.missingFiles()
        try run.unreferencedFiles()
        try run.indexes()
        try run.sharedFiles()
        try run.failingUnlinks()
        if options.orphans || options.deleteOrphans { try run.orphans() }
        // Only once the pass that deleted the files changed since the backup has gone through:
        // a run failing midway leaves the restore's hold on them (Store+Restore.swift).
        if options.deleteOrphans && options.sinceBackup { try releaseOrphanHold() }
        return run.report
    }
}

extension Store {
    /// Throws `untagged_root` naming the first root whose orphans are not known to be
    /// assetd's: one without assetd's CACHEDIR.TAG, itself or on an enclosing root. The
    /// database's owner's tag counts too: the user assetd runs as, when an admin runs
    /// `assetctl --db` as root.
    func checkOrphanConsent() throws(StoreError) {
        var st = stat()
        let owner = stat(path, &st) == 0 ? st.st_uid : nil
        func tagged(_ root: String) -> Bool { CacheDirectoryTag.isPresent(in: root, owner: owner) }
        for root in roots.paths.reversed() where !tagged(root) {
            let enclosing = roots.paths.filter { root.utf8.starts(with: ($0 + "/").utf8) }
            guard !enclosing.contains(where: tagged) else { continue }
            throw StoreError(.untaggedRoot, CacheDirectoryTag.refusal(root), detail: .object(["root": .string(root)]))
        }
    }
}

/// The state of one verify run: problems so far and what the repairs committed.
final class VerifyRun {
    /// The store checked.
    let store: Store
    /// What to check and change.
    let options: VerifyOptions
    /// Told once per page.
    let progress: (@Sendable (VerifyProgress) -> Void)?
    /// Problems listed so far (at most `options.limit`).
    var problems: [VerifyProblem] = []
    /// Problems found so far, listed or not.
    var found = 0
    /// Problems repaired so far.
    var repairedCount = 0
    /// The inode numbers of registered files found missing: the orphan phase keeps a file
    /// with one (moved, not gone), even once the repair has dropped its row.
    var movedInodes = Set<Int64>()
    /// Per root met, whether it is missing (`rootMissing`).
    var rootsMissing = [String: Bool]()
    /// Per root, files compared with their registered identity (`identityChanged`).
    var identities = [String: RootIdentities]()
    /// Referenced files below no configured root, by group (`noteUnconfigured`).
    var unconfigured = [String: (prefix: String, files: Int)]()
    /// Unconfigured files past the 1000th group, counted only.
    var unconfiguredElsewhere = 0
    /// Folders met below no configured root, and their group.
    var unconfiguredKeys = [String: String]()
    /// Summaries listed at the head of `problems` (`addFirst`).
    private var summaries = 0
    /// The repairs' commit reports, merged.
    var commit: CommitReport?

    /// A run that has found nothing yet.
    init(store: Store, options: VerifyOptions, progress: (@Sendable (VerifyProgress) -> Void)?) {
        self.store = store
        self.options = options
        self.progress = progress
    }

    /// The run's outcome so far.
    var report: VerifyReport {
        VerifyReport(
            problems: problems, found: found, repaired: repairedCount, clean: found == repairedCount, commit: commit)
    }

    /// Counts a problem and lists it while under the limit.
    func add(_ kind: String, _ subject: JSONValue, _ message: String, repaired: Bool) {
        found += 1
        if repaired { repairedCount += 1 }
        if problems.count < options.limit {
            problems.append(VerifyProblem(kind: kind, subject: subject, message: message, repaired: repaired))
        }
    }

    /// Counts a problem that sums up others and lists it after the summaries before it, at
    /// the head of the list whatever the limit: a report cut short still shows it. `bounded`
    /// ones count against the limit: listed while under it, pushing out the last problem
    /// that is no summary.
    func addFirst(_ kind: String, _ subject: JSONValue, _ message: String, repaired: Bool, bounded: Bool = false) {
        found += 1
        if repaired { repairedCount += 1 }
        if bounded && problems.count >= options.limit {
            guard problems.count > summaries else { return }
            problems.removeLast()
        }
        problems.insert(
            VerifyProblem(kind: kind, subject: subject, message: message, repaired: repaired), at: summaries)
        summaries += 1
    }

    /// Tells the caller how far a phase got (never inside a transaction: the callback may use the store).
    func report(_ phase: String, _ done: Int, _ total: Int?) {
        progress?(VerifyProgress(phase: phase, done: done, total: total))
    }

    /// Reads rows a page at a time in id order, one read transaction a page, and hands each
    /// page to `body` outside the read, reporting `phase` at the start and after each page.
    /// `count` counts the rows the pages will hold; `page` selects the row id first and takes
    /// `arguments`, then the last id seen and the page size as its last two parameters.
    func scan(
        _ phase: String, count: String, page: String, arguments: [(any DatabaseValueConvertible)?] = [],
        _ body: ([Row]) throws -> Void
    ) throws {
        let total = try store.read { r in try Int.fetchOne(r.db, sql: count) ?? 0 }
        var after: Int64 = 0
        var done = 0
        report(phase, 0, total)
        while true {
            let rows = try store.read { r in
                try Row.fetchAll(r.db, sql: page, arguments: StatementArguments(arguments + [after, Store.verifyPage]))
            }
            guard let last = rows.last else { break }
            after = last[0]
            done += rows.count
            try body(rows)
            report(phase, done, total)
        }
    }

    /// Runs a repair transaction and folds its report into the run's.
    func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        let committed = try store.write(body)
        merge(committed.report)
        return committed.value
    }

    private func merge(_ r: CommitReport) {
        guard commit != nil else {
            commit = r
            return
        }
        // In place (commit!): a copy per merge would make a long repair quadratic.
        commit!.commit = r.commit
        commit!.put += r.put
        commit!.touched += r.touched
        commit!.deleted += r.deleted
        commit!.edgesRemoved += r.edgesRemoved
        commit!.notifications += r.notifications
        commit!.filesQueued += r.filesQueued
    }

    // MARK: dangling edges

    /// Edges whose source object, or destination object or registry row, does not exist.
    /// Repair: the edge row goes (nothing fires: there is nothing on the other side to fire for).
    func danglingEdges() throws {
        try scan(
            "dangling_edges", count: "SELECT COUNT(*) FROM edge",
            page: """
                SELECT e.id, s.id IS NOT NULL AND (d.id IS NOT NULL OR f.id IS NOT NULL)
                FROM edge e LEFT JOIN object s ON s.id = e.src
                LEFT JOIN object d ON e.is_file = 0 AND d.id = e.dst
                LEFT JOIN file f ON e.is_file = 1 AND f.id = e.dst
                WHERE e.id > ? ORDER BY e.id LIMIT ?
                """
        ) { page in
            let dangling: [Int64] = page.filter { !($0[1] as Bool) }.map { $0[0] }
            if !dangling.isEmpty {
                let found = try store.read { r in try dangling.compactMap { try DanglingEdge.fetch(id: $0, r.db) } }
                var fixed = Set<Int64>()
                if options.repair {
                    fixed = try write { tx in try Set(found.filter { try tx.deleteDanglingEdge($0.id) }.map(\.id)) }
                }
                for e in found {
                    let ok = fixed.contains(e.id)
                    if options.repair && !ok { continue }  // whole again by the time of the repair
                    add(
                        "dangling_edge", e.json, "edge \"\(e.name)\" \(e.what)" + (ok ? "; the edge was removed" : ""),
                        repaired: ok)
                }
            }
        }
    }

    // MARK: unlink queue

    /// Unlinks that kept failing for longer than `failingFor`, by both clocks (ClockSteps.swift):
    /// a row queued a minute before a step forward of the wall clock has not failed for the
    /// step's length. (One queued before a step back is younger by the wall clock, reported
    /// that much later.) The cutoff includes its end, as every age cutoff's (`AgeCutoff`): a row
    /// exactly `failingFor` old is reported, where it was not before. Not repairable here:
    /// the obstacle (permissions, a busy or read-only mount) is outside the store.
    func failingUnlinks() throws {
        let (old, since) = store.clocks.read().olderThan(options.failingFor).sql("queued_at")
        try scan(
            "unlink_queue", count: "SELECT COUNT(*) FROM unlink_queue",
            page: """
                SELECT id, path, queued_at, attempts, last_error, next_attempt, attempts > 0 AND \(old)
                FROM unlink_queue WHERE id > ? ORDER BY id LIMIT ?
                """, arguments: since.map { $0 as (any DatabaseValueConvertible)? }
        ) { page in
            for row in page where row[6] as Bool {
                let p = PendingUnlink(
                    path: row[1], queuedAt: row[2], attempts: row[3], lastError: row[4], nextAttempt: row[5])
                add(
                    "unlink_failing", p.json,
                    "unlinking \(p.path) has failed \(p.attempts) times since it was queued: \(p.lastError ?? "unknown error")",
                    repaired: false)
            }
        }
    }
}

/// An edge with a missing end, named as far as its ends still exist.
struct DanglingEdge {
    /// The edge's row id.
    var id: Int64
    /// The edge's name.
    var name: String
    /// The source, nil when it is the missing end.
    var source: ObjectRef?
    /// The destination as a ref or `{file}`, or its bare row id when missing.
    var destination: JSONValue
    /// Which end is missing, for the message.
    var what: String

    /// `{name, source, destination}`: the problem's subject.
    var json: JSONValue {
        .object(["name": .string(name), "source": source?.json ?? .null, "destination": destination])
    }

    /// The edge with this id if an end of it is missing, else nil.
    static func fetch(id: Int64, _ db: Database) throws -> DanglingEdge? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT e.name, e.is_file, e.dst, s.collection, s.key, d.collection, d.key, f.path
                        FROM edge e LEFT JOIN object s ON s.id = e.src
                        LEFT JOIN object d ON e.is_file = 0 AND d.id = e.dst
                        LEFT JOIN file f ON e.is_file = 1 AND f.id = e.dst
                        WHERE e.id = ?
                        """), arguments: [id])
        else { return nil }
        let source: ObjectRef? = (row[3] as String?).map { ObjectRef($0, row[4]) }
        let isFile: Bool = row[1]
        let destination: JSONValue
        let destinationExists: Bool
        if isFile {
            let path: String? = row[7]
            destination = path.map { .object(["file": .string($0)]) } ?? .object(["file_id": .int(row[2])])
            destinationExists = path != nil
        } else {
            let collection: String? = row[5]
            destination = collection.map { ObjectRef($0, row[6]).json } ?? .object(["object_id": .int(row[2])])
            destinationExists = collection != nil
        }
        var missing = [String]()
        if source == nil { missing.append("its source object") }
        if !destinationExists { missing.append(isFile ? "its destination's registry row" : "its destination object") }
        guard !missing.isEmpty else { return nil }
        return DanglingEdge(
            id: id, name: row[0], source: source, destination: destination,
            what: "has lost " + missing.joined(separator: " and "))
    }
}

extension WriteTransaction {
    /// verify's repair of a dangling edge: the row goes if an end is still missing. A
    /// surviving source is re-indexed; a surviving file is left registered, so the next
    /// phase reports (and queues) it if nothing else references it.
    func deleteDanglingEdge(_ id: Int64) throws -> Bool {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT e.src, s.id IS NOT NULL FROM edge e LEFT JOIN object s ON s.id = e.src
                        LEFT JOIN object d ON e.is_file = 0 AND d.id = e.dst
                        LEFT JOIN file f ON e.is_file = 1 AND f.id = e.dst
                        WHERE e.id = ? AND (s.id IS NULL OR (d.id IS NULL AND f.id IS NULL))
                        """), arguments: [id])
        else { return false }
        try db.cachedStatement(sql: "DELETE FROM edge WHERE id = ?").execute(arguments: [id])
        if row[1] as Bool { indexDirty.insert(row[0]) }
        return true
    }
}
