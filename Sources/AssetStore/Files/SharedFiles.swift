// A file with several names (hard links, a name renamed away and the new one registered) has a
// row for each, all with its device and inode; the byte budget, quotas and `stats` count it
// once. Grouping every row by identity at each count costs five times the plain sum, so the
// store lists in `file_shared` the identities more than one row names, as rows are written,
// and a count subtracts what those rows count beyond their file (Saturating.swift).

import GRDB

enum SharedFiles {
    /// Lists the identity of row `id` if another row names it too: after the row is inserted or
    /// given a new identity. One look along the index `file_identity`.
    static func note(id: Int64, inode: Int64?, device: Int64?, _ db: Database) throws {
        guard let inode, let device else { return }
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO file_shared (inode, device) SELECT ?1, ?2
                    WHERE EXISTS (SELECT 1 FROM file WHERE inode = ?1 AND device = ?2 AND id <> ?3)
                """
        ).execute(arguments: [inode, device, id])
    }

    /// True when an identity listed is named by one row or none now (its other rows deleted or
    /// given another identity): it counts nothing, but the list should not keep it.
    static func stale(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM file_shared s WHERE \(single))") ?? false
    }

    /// Drops the identities `stale` finds. A look along the index for each listed.
    static func prune(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM file_shared AS s WHERE \(single)")
    }

    private static let single = """
        (SELECT COUNT(*) FROM (SELECT 1 FROM file f WHERE f.inode = s.inode AND f.device = s.device LIMIT 2)) < 2
        """
}
