// Per-owner quotas (assetd(8), DATA MODEL, Lifecycle policies): the owner furthest over
// quota (by ratio) loses its least recently accessed object, then the ratios are
// recomputed, until every owner is within quota or has nothing evictable left. A file
// counts once toward each owner holding it.

import GRDB

/// `[[policy.quota]]`.
final class QuotaStep: PolicyStep {
    let quotas: [PolicyConfiguration.Quota]
    /// An explicit eviction of some bytes takes them from owners over quota first: it stops
    /// once the run has freed this many.
    let stopAt: Int64?
    let reason: EvictionReason
    var phase: String { "quota" }
    var walksOwnerLRU: Bool { true }
    // Owners by their bytes, as the database tells them apart.
    private var cursors: [UTF8Key: (Double, Int64)] = [:]
    private var exhausted: Set<UTF8Key> = []

    init(_ quotas: [PolicyConfiguration.Quota], stopAt: Int64? = nil, reason: EvictionReason = .quota) {
        self.quotas = quotas
        self.stopAt = stopAt
        self.reason = reason
    }

    func advance(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool {
        var usage = [UTF8Key: Int64]()
        for q in quotas { usage[UTF8Key(q.owner)] = try QuotaStep.usage(of: q.owner, tx.db) }
        var g = run.protection()
        g.needsFiles = true
        var handled = false  // at least one candidate a batch, so that a run of refusals ends
        while !(handled && run.batchFull) {
            if let stopAt, run.plan.bytes >= stopAt { return true }
            // Furthest over first; ties by name so a dry run and the real run agree.
            let over = quotas.map { UTF8Key($0.owner) }.enumerated()
                .filter { !exhausted.contains($1) && usage[$1, default: 0] > quotas[$0].maxBytes }
                .map { i, o in (o, Double(usage[o, default: 0]) / Double(max(quotas[i].maxBytes, 1))) }
                .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0.string.utf8.lexicographicallyPrecedes($1.0.string.utf8) }
            guard let (key, ratio) = over.first else {
                // Counted down by name, usage reads low where names of one file went while
                // others stay (or went together): counted again before the step ends, unless
                // no file has several names (entries go at the commit, not before).
                guard try SharedFiles.any(tx.db) else { return true }
                var still = false
                for q in quotas where !exhausted.contains(UTF8Key(q.owner)) {
                    let exact = try QuotaStep.usage(of: q.owner, tx.db)
                    if exact != usage[UTF8Key(q.owner)] { usage[UTF8Key(q.owner)] = exact }
                    if exact > q.maxBytes { still = true }
                }
                if still { continue }
                return true
            }
            let owner = key.string
            // Young and pinned objects come too, each charged: passed over inside SQLite, any
            // number of them held the writer in a one-batch dry run.
            var row: PolicyCandidate?
            while row == nil && !(handled && run.batchFull) {
                let rows = try run.candidates(
                    tx, order: "accessed", after: cursors[key], condition: "d.owner = ?", arguments: [owner],
                    limit: 64)
                if rows.isEmpty { break }
                for r in rows {
                    if handled && run.batchFull { break }
                    run.charge(1)
                    handled = true
                    if let why = r.held ?? (g.leases(r.ref) ? .leased : nil) {
                        cursors[key] = (r.key, r.id)
                        run.skip(r.id, why)
                        continue
                    }
                    row = r
                    break
                }
            }
            guard let row else {
                if !(handled && run.batchFull) { exhausted.insert(key) }
                continue
            }
            let detail = "quota: \(owner) at \(Int((ratio * 100).rounded()))% of quota, least recently accessed"
            let effect = try run.evict(tx, [row.id], reason: reason, guard: g, detail: detail)
            if run.deferred { return false }  // the next batch begins with it
            cursors[key] = (row.key, row.id)
            guard let effect else { continue }
            try QuotaStep.subtract(effect, from: &usage, tx.db)
        }
        return false
    }

    /// SQL: the ids of the files the owner `?1`'s objects hold.
    private static let held = """
        SELECT e.dst FROM edge e JOIN object o ON o.id = e.src WHERE e.is_file = 1 AND o.owner = ?1
        """
    /// Bytes of the distinct files `owner`'s objects hold, a file with several names once.
    static func usage(of owner: String, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT CAST(TOTAL(f.size) - (\(Sizes.excess(where: "f.id IN (\(held))", sharedFirst: false))) AS INTEGER)
                    FROM file f WHERE f.id IN (\(held))
                    """), arguments: [owner]) ?? 0
    }

    /// Lowers each affected owner's usage by the files it no longer holds after `effect`.
    static func subtract(_ effect: EvictionEffect, from usage: inout [UTF8Key: Int64], _ db: Database) throws {
        let ownerOf = Dictionary(
            effect.deleted.map { (ObjectRefKey($0.ref), UTF8Key($0.owner)) }, uniquingKeysWith: { a, _ in a })
        let queued = Dictionary(effect.files.map { (Array($0.path.utf8), $0.size) }, uniquingKeysWith: { a, _ in a })
        var seen = Set<[UInt8]>()
        let shared = try SharedFiles.any(db)
        for r in effect.edgesRemoved {
            guard case .file(let path) = r.edge.destination, let owner = ownerOf[ObjectRefKey(r.edge.source)],
                usage[owner] != nil, seen.insert(Array((owner.string + "\u{0}" + path).utf8)).inserted
            else { continue }
            if let size = queued[Array(path.utf8)] {
                // A file another name still names is freed for this owner only if it holds no name of it.
                if shared, let survivor = try SharedFiles.survivor(queued: path, db),
                    try SharedFiles.held(survivor, by: owner.string, db)
                {
                    continue
                }
                usage[owner]! = usage[owner]!.subtracting(saturating: size)
                continue
            }
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT f.size, EXISTS (SELECT 1 FROM edge e JOIN object o ON o.id = e.src
                            WHERE e.is_file = 1 AND e.dst = f.id AND o.owner = ?)
                        FROM file f WHERE f.path = ?
                        """), arguments: [owner.string, path])
            if let row, !(row[1] as Bool) { usage[owner]! = usage[owner]!.subtracting(saturating: row[0] as Int64) }
        }
    }
}
