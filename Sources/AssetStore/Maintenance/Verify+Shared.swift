// verify's shared-files phase (assetd(8), CONTROL PROTOCOL, Methods): every inode more than one
// registry row names must be listed in `file_shared` (SharedFiles.swift), or the budget, quotas
// and `stats` count its file once per name. Walked along the index `file_identity`, one page
// of inode numbers per read transaction. Repair: the file is listed.

import GRDB
import JSON

extension VerifyRun {
    /// Inodes named by several rows that the list of shared files lacks; one problem each.
    func sharedFiles() throws {
        let phase = "shared_files"
        let total = try store.read { r in
            try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM file WHERE inode IS NOT NULL AND device IS NOT NULL") ?? 0
        }
        var after: (inode: Int64, device: Int64)?
        var done = 0
        report(phase, 0, total)
        while true {
            // The first page from the start, the others from the last seen (a range along the
            // index; an OR here would scan it from the start for every page).
            let from = after.map { _ in "(f.inode, f.device) > (?2, ?3)" } ?? "?2 = ?3"
            let rows = try store.read { r in
                try Row.fetchAll(
                    r.db,
                    sql: """
                        SELECT f.inode, f.device, COUNT(*),
                            COUNT(*) > 1 AND NOT EXISTS (SELECT 1 FROM file_shared s WHERE s.inode = f.inode AND s.device = f.device)
                        FROM file f WHERE f.inode IS NOT NULL AND f.device IS NOT NULL AND \(from)
                        GROUP BY f.inode, f.device ORDER BY f.inode, f.device LIMIT ?1
                        """,
                    arguments: [Store.verifyPage, after?.inode ?? 0, after?.device ?? 0])
            }
            guard let last = rows.last else { break }
            after = (last[0], last[1])
            done += rows.reduce(0) { $0 + ($1[2] as Int) }
            let unlisted: [(inode: Int64, device: Int64, names: Int)] = rows.filter { $0[3] as Bool }.map {
                ($0[0], $0[1], $0[2])
            }
            var fixed = Set<[Int64]>()
            if options.repair && !unlisted.isEmpty {
                fixed = try write { tx in
                    Set(
                        try unlisted.filter { try tx.listShared(inode: $0.inode, device: $0.device) }.map {
                            [$0.inode, $0.device]
                        })
                }
            }
            for u in unlisted {
                let ok = fixed.contains([u.inode, u.device])
                if options.repair && !ok { continue }  // no longer named twice by the time of the repair
                add(
                    "unlisted_shared_file", .object(["inode": .int(u.inode), "device": .int(u.device)]),
                    "\(u.names) registry rows name inode \(u.inode) on device \(u.device), not listed as shared: totals count its file once per name"
                        + (ok ? "; it was listed" : ""),
                    repaired: ok)
            }
            report(phase, done, total)
        }
    }
}

extension WriteTransaction {
    /// verify's repair of an unlisted shared file: listed if two rows or more still name it.
    func listShared(inode: Int64, device: Int64) throws -> Bool {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO file_shared (inode, device) SELECT ?1, ?2
                WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM file WHERE inode = ?1 AND device = ?2 LIMIT 2)) = 2
                """, arguments: [inode, device])
        if db.changesCount > 0 { return true }
        return try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM file_shared WHERE inode = ? AND device = ?)",
            arguments: [inode, device]) ?? false
    }
}
