// verify's index phase (assetd(8), CONTROL PROTOCOL, Methods): each index, the built-in one
// and every user index, is compared with a recomputation from the objects by the same
// SELECTs that populate it (IndexTable), one range of object ids per read transaction.
// Repair: rebuild that index.

import GRDB

extension VerifyRun {
    /// Object ids per compared range.
    static let indexRange: Int64 = 5000

    /// Rows of every index that differ from a recomputation; one problem per index.
    func indexes() throws {
        let phase = "indexes"
        let (defs, objects) = try store.read { r in
            let defs: [IndexDefinition?] = [nil] + (try r.storedIndexes()).map(Optional.some)
            return (defs, try r.objectCount())
        }
        let total = objects * defs.count
        var done = 0
        report(phase, 0, total)
        for def in defs {
            let name = def?.name ?? IndexDefinition.defaultName
            let (differing, sample) = try differences(def, done: &done, total: total)
            guard differing > 0 else { continue }
            var outcome: RepairOutcome?
            if options.repair {
                try write { tx in try tx.rebuildIndex(name) }
                outcome = .repaired("the index was rebuilt")
            }
            let examples = sample.map(\.description).joined(separator: ", ")
            add(
                "index_mismatch", .object(["index": .string(name)]),
                "index \(name): \(differing) rows differ from a recomputation (\(examples)\(differing > sample.count ? ", …" : ""))"
                    + (outcome?.suffix ?? ""),
                repaired: outcome?.repaired ?? false)
        }
    }

    /// The number of objects whose row in the index is missing, extra or different, and the
    /// first few of them.
    private func differences(_ def: IndexDefinition?, done: inout Int, total: Int) throws -> (Int, [ObjectRef]) {
        let name = def?.name ?? IndexDefinition.defaultName
        let table = IndexTable.table(name)
        let recomputed =
            def.map { IndexTable.userSelect($0, extraCondition: "o.id > ? AND o.id <= ?") }
            ?? IndexTable.defaultSelect + " WHERE o.id > ? AND o.id <= ?"
        let stored = "SELECT * FROM \"\(table)\" WHERE object_id > ? AND object_id <= ?"
        let sql = """
            SELECT * FROM (\(recomputed) EXCEPT \(stored)) UNION ALL SELECT * FROM (\(stored) EXCEPT \(recomputed))
            """
        let end = try store.read { r in
            max(
                try Int64.fetchOne(r.db, sql: "SELECT MAX(id) FROM object") ?? 0,
                try Int64.fetchOne(r.db, sql: "SELECT MAX(object_id) FROM \"\(table)\"") ?? 0)
        }
        var count = 0
        var sample = [ObjectRef]()
        var low: Int64 = 0
        while low < end {
            let high = low + VerifyRun.indexRange >= end ? Int64.max : low + VerifyRun.indexRange
            let (rows, objects) = try store.read { r in
                (
                    try Row.fetchAll(r.db, sql: sql, arguments: [low, high, low, high, low, high, low, high]),
                    try Int.fetchOne(
                        r.db, sql: "SELECT COUNT(*) FROM object WHERE id > ? AND id <= ?", arguments: [low, high])
                        ?? 0
                )
            }
            var ids = Set<Int64>()
            for row in rows where ids.insert(row[0]).inserted {
                if sample.count < 5 { sample.append(ObjectRef(row[1], row[2])) }
            }
            count += ids.count
            done += objects
            report("indexes", done, total)
            low = high
        }
        return (count, sample)
    }
}
