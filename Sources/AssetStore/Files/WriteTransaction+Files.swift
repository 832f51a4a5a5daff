// The write transaction's file registry: a file's row is inserted or refreshed whenever an
// edge names it or its holder is put or touched; taking a path again cancels its queued unlink.

import GRDB

extension WriteTransaction {
    /// True when nothing is at `path` below a folder on the filesystem `device` was recorded
    /// on (or its number now): the sweep's rule. Otherwise the file is hidden, not gone.
    private func provedGone(_ path: String, device: Int64) -> Bool {
        guard let root = store.roots.root(of: path) else { return true }
        return SafeUnlinker.isGone(
            folderDevice: VerifyRun.deepestFolderDevice(path, root: root, roots: store.roots), device: device,
            deviceNow: store.deviceNow(device, path: path))
    }

    /// Inserts or refreshes a registry row; a size change re-indexes every holder. The lookup
    /// and the insert, a put's, are stepped raw: GRDB's row and arguments cost more than them.
    /// A checked probe's state (a non-admin's, under enforce_ownership) claims the row
    /// (FileClaim.swift); one that finds nothing judged only a folder, and may not take a
    /// row another owner holds (a file seen there, or a path another user claimed).
    func registerFile(path: String, state: FileState) throws -> Int64 {
        try refuseStoreFile(path, state)
        let statements = try fileStatements()
        var found: (id: Int64, size: Int64, same: Bool, device: Int64?, inode: Int64?, claim: String?)?
        try statements.lookup.forEachRawRow({ Statement.bindText($0, 1, path) }) { r in
            func int(_ i: Int32) -> Int64? { r.isNull(i) ? nil : r.int64(i) }
            let same =
                r.int64(1) == state.size && int(2) == state.device && int(3) == state.inode
                && (r.isNull(4) ? nil : r.double(4)) == state.mtime && (r.int64(5) != 0) == !state.exists
                && FileStamp(birth: int(6), generation: int(7), ctime: int(8)) == state.stamp
            found = (r.int64(0), r.int64(1), same, int(2), int(3), r.isNull(9) ? nil : r.text(9))
        }
        if let found {
            let row = RowClaim(text: found.claim)
            if let judged = state.judgement, !state.exists {
                try mayClaim(path, found.id, found.device, row, judged)
            }
            let claim = try claimAfter(found.id, state, kept: found.claim, row)
            // A claimed row records only what its claimant's own looks saw: another user's look,
            // or an unchecked one, that leaves the claim leaves the row, so a delete that cannot
            // look (FileClaim.identify) never falls back on a file no claimant judged.
            if case .claim(let c) = row, state.judgement?.uid != c.uid,
                claim == found.claim
            {
                return found.id
            }
            // Missing now, seen before: its device and inode stay unless it is proven gone,
            // or a disk not mounted now would make the sweep count it unlinked (and leak it).
            if !found.same, !state.exists, let device = found.device, !provedGone(path, device: device) {
                return found.id
            }
            let id = found.id
            let stamp = state.stamp
            if !found.same || claim != found.claim {
                try db.cachedStatement(
                    sql: """
                        UPDATE file SET size = ?, device = ?, inode = ?, mtime = ?, missing = ?, birth = ?, generation = ?,
                        ctime = ?, claim = ? WHERE id = ?
                        """
                ).execute(arguments: [
                    state.size, state.device, state.inode, state.mtime, !state.exists, stamp.birth,
                    stamp.generation, stamp.ctime, claim, id,
                ])
                if found.device != state.device || found.inode != state.inode {
                    try SharedFiles.note(statements.note, id: id, inode: state.inode, device: state.device)
                    rowLeft(inode: found.inode, device: found.device)
                }
            }
            if found.size != state.size {
                let holders = try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT src FROM edge WHERE is_file = 1 AND dst = ?"), arguments: [id])
                indexDirty.formUnion(holders)
                derivedSized.subtract(holders)
            }
            return id
        }
        let claim = FileClaim(state)?.text
        let id = try statements.insert.executeRawCounting { s in
            Statement.bindText(s, 1, path)
            Statement.bindInt64(s, 2, state.size)
            // Left unbound: NULL.
            if let device = state.device { Statement.bindInt64(s, 3, device) }
            if let inode = state.inode { Statement.bindInt64(s, 4, inode) }
            if let mtime = state.mtime { Statement.bindDouble(s, 5, mtime) }
            Statement.bindInt64(s, 6, state.exists ? 0 : 1)
            Statement.bindDouble(s, 7, now)
            if let birth = state.stamp.birth { Statement.bindInt64(s, 8, birth) }
            if let generation = state.stamp.generation { Statement.bindInt64(s, 9, generation) }
            if let ctime = state.stamp.ctime { Statement.bindInt64(s, 10, ctime) }
            if let claim { Statement.bindText(s, 11, claim) }
        }.rowID
        try SharedFiles.note(statements.note, id: id, inode: state.inode, device: state.device)
        // Taken again: a queued unlink of this path (from this or an earlier commit) is cancelled.
        let unqueued = try statements.unqueue.executeRawCounting { Statement.bindText($0, 1, path) }.changes
        if unqueued > 0 { report.filesQueued.removeAll { $0.utf8.elementsEqual(path.utf8) } }
        return id
    }
}

extension WriteTransaction {
    /// Refuses (`unsafe_path`) a root's marker (assetd(8), ROOTS), and a file that is one of
    /// the store's own by device and inode, the
    /// database or its write-ahead log seen below a root through a bind mount of its folder
    /// or a hard link: deleting its holder would unlink it (assetd(8), Managed roots). The
    /// config checks refuse such a layout at start; this is the last guard. One compare for
    /// a file on another device than the database's.
    func refuseStoreFile(_ path: String, _ state: FileState) throws(StoreError) {
        // A root's marker (RootMarker.swift): registered, its holder's delete would unlink it.
        if path.hasSuffix(RootMarker.nameBelow), RootMarker.isMarker(path.utf8, roots: store.roots.paths) {
            throw StoreError(
                .unsafePath, "\(path) is a root's marker, which binds the root to its database: it is never registered",
                detail: .string(path))
        }
        guard state.exists, let device = state.device, let inode = state.inode, device == store.ownDevice else {
            return
        }
        let own = ownFiles ?? store.ownFileIDs()
        ownFiles = own
        guard own.contains(FileID(device: device, inode: inode)) else { return }
        throw StoreError(
            .unsafePath,
            "\(path) is one of the store's own files (its database, write-ahead log, lock or reserve), "
                + "seen below a root through a bind mount or a hard link: it is never registered",
            detail: .string(path))
    }

    /// Refuses a non-admin's look that found nothing at a registered path when the row is not
    /// its to claim: a file seen there that another owner's objects hold (and its own do not),
    /// or a claim of another user whose objects still hold it.
    private func mayClaim(
        _ path: String, _ id: Int64, _ device: Int64?, _ row: RowClaim, _ judged: FileJudgement
    ) throws {
        if device != nil, try heldByOtherOwner(file: id, owner: judged.owner), try !held(id, by: judged.owner) {
            throw StoreError(
                .permissionDenied, "\(path) is registered as a file that is not there now, held by another owner",
                detail: .string(path))
        }
        if case .claim(let c) = row, c.uid != judged.uid, try held(id, by: c.owner) {
            throw StoreError(
                .permissionDenied, "\(path) was named by another user while it is not there",
                detail: .string(path))
        }
    }

    /// The claim a row keeps after `state`: a checked look claims it for its caller, unless
    /// another user claimed it and that user's objects still hold it; an unchecked look keeps
    /// what there is.
    private func claimAfter(_ id: Int64, _ state: FileState, kept: String?, _ row: RowClaim) throws -> String? {
        guard let judged = state.judgement, let claim = FileClaim(state) else { return kept }
        if case .claim(let c) = row, c.uid != judged.uid, try held(id, by: c.owner) { return kept }
        return claim.text
    }

    /// The registry's lookup, insert, unqueue and shared-file look, found once a transaction (GRDB's statement
    /// cache hashes the SQL text at each lookup).
    struct FileStatements {
        let lookup: Statement
        let insert: Statement
        let unqueue: Statement
        let note: Statement
    }

    func fileStatements() throws -> FileStatements {
        if let cachedFileStatements { return cachedFileStatements }
        let found = FileStatements(
            lookup: try db.cachedStatement(
                sql: """
                    SELECT id, size, device, inode, mtime, missing, birth, generation, ctime, claim FROM file WHERE path = ?
                    """),
            insert: try db.cachedStatement(
                sql: """
                    INSERT INTO file (path, size, device, inode, mtime, missing, first_seen, birth, generation, ctime, claim)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """),
            unqueue: try db.cachedStatement(sql: "DELETE FROM unlink_queue WHERE path = ?"),
            note: try db.cachedStatement(sql: SharedFiles.noteSQL))
        cachedFileStatements = found
        return found
    }
}
