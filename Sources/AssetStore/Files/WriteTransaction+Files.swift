// The write transaction's file registry: a file's row is inserted or refreshed whenever an
// edge names it or its holder is put or touched; taking a path again cancels its queued unlink.

import GRDB

extension WriteTransaction {
    /// Re-reads the registry rows of the files an object holds (on every put and touch:
    /// assetd(8), DATA MODEL, Files).
    func refreshHeldFiles(of id: Int64, except skip: Set<[UInt8]> = []) throws {
        // Made distinct here, by file id (String equality would merge two paths that differ
        // only in Unicode normalisation): DISTINCT in SQL built a temporary b-tree each time.
        var seen = Set<Int64>()
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT f.id, f.path FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1"),
            arguments: [id])
        for row in rows where seen.insert(row[0]).inserted {
            let path: String = row[1]
            guard !skip.contains(Array(path.utf8)) else { continue }
            if let root = store.roots.root(of: path) {
                _ = try registerFile(
                    path: path, state: FileProbe.identity(path: path, root: root, roots: store.roots.paths))
            }
        }
    }

    /// Inserts or refreshes a registry row; a size change re-indexes every holder.
    func registerFile(path: String, state: FileState) throws -> Int64 {
        if let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT id, size, device, inode, mtime, missing, birth, generation, ctime FROM file WHERE path = ?
                    """),
            arguments: [path])
        {
            let id: Int64 = row[0]
            let size: Int64 = row[1]
            let stamp = state.stamp
            let was = FileStamp(birth: row[6], generation: row[7], ctime: row[8])
            let changed =
                size != state.size || row[2] != state.device || row[3] != state.inode
                || row[4] != state.mtime || row[5] != !state.exists
            if changed || was != stamp {
                try db.cachedStatement(
                    sql: """
                        UPDATE file SET size = ?, device = ?, inode = ?, mtime = ?, missing = ?, birth = ?, generation = ?,
                        ctime = ? WHERE id = ?
                        """
                ).execute(arguments: [
                    state.size, state.device, state.inode, state.mtime, !state.exists, stamp.birth,
                    stamp.generation, stamp.ctime, id,
                ])
            }
            if size != state.size {
                let holders = try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT src FROM edge WHERE is_file = 1 AND dst = ?"), arguments: [id])
                indexDirty.formUnion(holders)
            }
            return id
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO file (path, size, device, inode, mtime, missing, first_seen, birth, generation, ctime)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            path, state.size, state.device, state.inode, state.mtime, !state.exists, now, state.stamp.birth,
            state.stamp.generation, state.stamp.ctime,
        ])
        let id = db.lastInsertedRowID
        // Taken again: a queued unlink of this path (from this or an earlier commit) is cancelled.
        try db.cachedStatement(sql: "DELETE FROM unlink_queue WHERE path = ?").execute(arguments: [path])
        if db.changesCount > 0 { report.filesQueued.removeAll { $0.utf8.elementsEqual(path.utf8) } }
        return id
    }
}
