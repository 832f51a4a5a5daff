// A file with several names (hard links, a name renamed away and the new one registered) has a
// row for each, all with its device, inode, birth time and generation; the byte budget, quotas
// and `stats` count it once. Grouping every row by identity at each count costs five times the
// plain sum, so the store lists in `file_shared` the device and inode numbers more than one row
// names, as rows are written, and a count subtracts what those rows count beyond their file
// (Saturating.swift). Rows of one inode number with different birth times or generations are
// different files (the number was used again): they count apart.

import GRDB

enum SharedFiles {
    /// SQL grouping the rows `alias` of `file` by file.
    static func identity(_ alias: String) -> String {
        "\(alias).inode, \(alias).device, \(alias).birth, \(alias).generation"
    }

    /// SQL listing the identity of row `?3` if another row names its inode `?1` on device
    /// `?2` too: run after the row is inserted or given a new identity. One look along the
    /// index `file_identity`.
    static let noteSQL = """
        INSERT OR IGNORE INTO file_shared (inode, device) SELECT ?1, ?2
            WHERE EXISTS (SELECT 1 FROM file WHERE inode = ?1 AND device = ?2 AND id <> ?3)
        """

    /// Runs `note` (a statement of `noteSQL`) for row `id`, stepped raw: a put runs it for
    /// every new file.
    static func note(_ note: Statement, id: Int64, inode: Int64?, device: Int64?) throws {
        guard let inode, let device else { return }
        try note.executeRaw { s in
            Statement.bindInt64(s, 1, inode)
            Statement.bindInt64(s, 2, device)
            Statement.bindInt64(s, 3, id)
        }
    }

    /// SQL dropping inode `?1` on device `?2` from the list if fewer than two rows name it
    /// now. A look at the list's key, and along the index `file_identity` only for a listed
    /// file (correlated, so SQLite does not count before the look).
    static let dropSQL = "DELETE FROM file_shared AS s WHERE s.inode = ?1 AND s.device = ?2 AND \(single)"

    /// True if any file is listed: else no name survives another, and `survivor` need not be asked.
    static func any(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM file_shared)")) ?? false
    }

    /// The identity of a file an eviction just queued at `path`, if another registered name
    /// still names it: its bytes are not freed.
    static func survivor(queued path: String, _ db: Database) throws -> Row? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT q.inode, q.device, q.birth, q.generation FROM unlink_queue q
                    WHERE q.path = ? AND EXISTS (SELECT 1 FROM file_shared s WHERE s.inode = q.inode AND s.device = q.device)
                    AND EXISTS (SELECT 1 FROM file f WHERE f.inode = q.inode AND f.device = q.device
                        AND f.birth IS q.birth AND f.generation IS q.generation)
                    ORDER BY q.id DESC LIMIT 1
                    """), arguments: [path])
    }

    /// True if `owner`'s objects hold a name of the file `survivor` returned.
    static func held(_ survivor: Row, by owner: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM file f JOIN edge e ON e.is_file = 1 AND e.dst = f.id
                        JOIN object o ON o.id = e.src WHERE f.inode = ? AND f.device = ? AND f.birth IS ?
                        AND f.generation IS ? AND o.owner = ?)
                    """),
            arguments: [survivor[0], survivor[1], survivor[2], survivor[3], owner]) ?? false
    }

    /// True when a listed inode is named by one row or none now (its other rows deleted or
    /// given another identity): it counts nothing, but each count would read it.
    static func stale(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM file_shared s WHERE \(single))") ?? false
    }

    /// Drops what `stale` finds among the next `limit` listed after `after`, in order; the last
    /// looked at, or nil at the end of the list. A look along the index for each.
    static func prune(after: (Int64, Int64), limit: Int, _ db: Database) throws -> (Int64, Int64)? {
        let keys = try Row.fetchAll(
            db,
            sql: """
                SELECT inode, device FROM file_shared WHERE (inode, device) > (?, ?) ORDER BY inode, device LIMIT ?
                """,
            arguments: [after.0, after.1, limit])
        guard let last = keys.last else { return nil }
        let end: (Int64, Int64) = (last[0], last[1])
        try db.execute(
            sql: """
                DELETE FROM file_shared AS s
                WHERE (s.inode, s.device) > (?, ?) AND (s.inode, s.device) <= (?, ?) AND \(single)
                """,
            arguments: [after.0, after.1, end.0, end.1])
        return keys.count < limit ? nil : end
    }

    private static let single = """
        (SELECT COUNT(*) FROM (SELECT 1 FROM file f WHERE f.inode = s.inode AND f.device = s.device LIMIT 2)) < 2
        """
}

extension WriteTransaction {
    /// Notes that a row naming `inode` on `device` left (deleted, or given another identity).
    func rowLeft(inode: Int64?, device: Int64?) {
        if let inode, let device { sharedLeft.append((inode, device)) }
    }

    /// Drops from the list the files noted by `rowLeft` that fewer than two rows name now, so
    /// that the list stays bounded without a policy run's prune (a client could otherwise grow
    /// it by two requests an entry). At commit, not as each row goes: a policy batch asks
    /// after each eviction whether other names keep its files (`survivor`), which the entry
    /// answers. A look at the list's key for each, unless nothing is listed.
    func dropLeftShared() throws {
        guard !sharedLeft.isEmpty else { return }
        defer { sharedLeft = [] }
        if sharedLeft.count > 1, try !SharedFiles.any(db) { return }
        let drop = try db.cachedStatement(sql: SharedFiles.dropSQL)
        for (inode, device) in sharedLeft {
            try drop.executeRaw { s in
                Statement.bindInt64(s, 1, inode)
                Statement.bindInt64(s, 2, device)
            }
        }
    }
}
