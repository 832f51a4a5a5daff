// The looks queue rows owe (OwedLook.swift), taken by the sweep before a batch's write
// transaction, not in it: a look walks the file's folders from the root, and on a failing disk
// (EIO taking seconds a call) or short of descriptors every look held in the transaction would
// hold the single writer, and every client's put with it. The transaction then only records a
// look whose row still owes that very look (its `identify` text unchanged); the look itself
// checked all it checks in the transaction (OwedLook), and the unlink after it compares the
// identity it recorded with what is at the path then, as for any row. A batch takes a bounded
// number of looks (rows, names walked, and none after a transient error); its other owed rows
// are left as they are, still due, for the next sweep: owed, not failed. So are the other
// files of the folders on their way: the late look refuses a folder whose entries changed
// since the look was owed, and the sweep's own unlinks there would change it.

import GRDB

/// An owed look taken before the batch's transaction, by queue row.
struct TakenLook {
    /// The row's `identify` text when it was read: recorded only for a row that still owes it.
    var owed: String
    /// The identity it found (NULL columns when nothing is vouched for), to record.
    var file: RegisteredFile
    /// Set while the look cannot be taken (the root away, a transient error): the row's
    /// outcome, its look still owed.
    var decided: UnlinkOutcome?
    /// Why nothing was vouched for: the skip says so.
    var notTaken: String?
}

extension Store {
    /// Owed looks a sweep batch takes at most: the rest stay owed, due, for the next sweep.
    static let owedLooksPerBatch = 64
    /// Names below the roots a batch's owed looks walk at most (the root counts one): each
    /// costs an openat, a statx and a close (and, judged for a claim, an fstat and an ACL
    /// read), so the budget bounds system calls, not time. A batch's first look is taken
    /// however deep its path.
    static let owedLookNames = 1024

    /// Takes the looks owed by the due rows among the first `limit` after `lastID` (as
    /// `takeSweepBatch` would take them), outside any transaction, in queue order, within
    /// `owedLooksPerBatch` and `owedLookNames`; none after one that ended on a transient error
    /// (the disk or the descriptor table that failed it would likely fail the next).
    func takeOwedLooks(
        after lastID: Int64, durable: Int64, now: ClockSteps.Reading, retryFailed: Bool, limit: Int
    ) throws -> [Int64: TakenLook] {
        var owing = [(id: Int64, path: String, size: Int64, owed: String)]()
        try read { r in
            try r.db.cachedStatement(
                sql: """
                    SELECT id, path, size, identify FROM (
                        SELECT id, path, size, identify FROM unlink_queue \(Store.sweepWindow(now)))
                    WHERE identify IS NOT NULL ORDER BY id LIMIT ?
                    """
            ).forEachRawRow(
                Store.sweepWindowArguments(lastID, durable, now, retryFailed, limit) + [Store.owedLooksPerBatch]
            ) {
                if let path = $0.text(1), let owed = $0.text(3) {
                    owing.append((id: $0.int64(0), path: path, size: $0.isNull(2) ? 0 : $0.int64(2), owed: owed))
                }
            }
        }
        var looks = [Int64: TakenLook]()
        var names = 0
        for row in owing {
            let cost =
                1 + (roots.root(of: row.path).map { ManagedRoots.components(of: row.path, below: $0).count } ?? 0)
            if !looks.isEmpty, names + cost > Store.owedLookNames { break }
            names += cost
            let (look, transient) = takeOwedLook(path: row.path, size: row.size, owed: row.owed)
            looks[row.id] = look
            if transient { break }
        }
        return looks
    }

    /// The look at a queued file its deleting commit could not take (a transient error),
    /// taken now, judged as that commit would have, and only on a file nothing changed on
    /// the way to since (`OwedLook`); and whether it ended on a transient error again.
    private func takeOwedLook(path: String, size: Int64, owed: String) -> (TakenLook, Bool) {
        // Unreadable (written by a later assetd?): nothing is known, nothing taken.
        var taken = TakenLook(
            owed: owed, file: RegisteredFile(path: path, size: size, device: nil, inode: nil, stamp: .none),
            notTaken: "its owed look is unreadable")
        guard let look = OwedLook(text: owed) else { return (taken, false) }
        taken.notTaken = nil
        switch taken.file.identify(self, claim: look.claim, again: look) {
        case .done: break
        case .notTaken(let why): taken.notTaken = why
        case .away(let outcome): taken.decided = outcome
        case .transient(let e):
            taken.decided = .failed(errno: e, call: "the look before the unlink")
            return (taken, true)
        }
        return (taken, false)
    }

    /// The folders on the way to a file of `rows` whose look is owed and was not taken
    /// (`looks`; rows in `known` aside, their outcome recorded already): the files in them
    /// are left too, as their unlinks would change the folder, and the look, taken later,
    /// refuses any folder below the root on its way whose entries changed since it was owed.
    /// Every one below the root, not only the file's own: unlinking `a/p` changes `a`, which
    /// the look at `a/b/f` walks. The root's own change the look does not check.
    func foldersAwaitingLooks(
        _ rows: [QueuedUnlink], _ looks: [Int64: TakenLook], skipping known: [Int64: UnlinkOutcome]
    ) -> Set<Substring> {
        var folders = Set<Substring>()
        for row in rows {
            guard let owed = row.owed, known[row.id] == nil, looks[row.id]?.owed != owed else { continue }
            var folder = Store.folder(of: row.path)
            // Not under a root (the look will say so): its own folder, as the walk's is unknown.
            let root = roots.root(of: row.path)?.utf8.count ?? folder.utf8.count - 1
            while folder.utf8.count > root, folders.insert(folder).inserted {
                folder = folder[..<(folder.lastIndex(of: "/") ?? folder.startIndex)]
            }
        }
        return folders
    }

    /// The folder holding `path` (normalised), as a prefix of it.
    static func folder(of path: String) -> Substring { path[..<(path.lastIndex(of: "/") ?? path.startIndex)] }

    /// Records `row`'s owed look, taken before this transaction (`looks`), if the row still
    /// owes that very look: its identity in the row (and `row`), or, while it cannot be taken,
    /// its outcome. Nil when no such look was taken: the row is left for a later sweep. Else
    /// the outcome, if decided, and why nothing was vouched for, if so, for its skip.
    func recordOwedLook(
        _ row: inout QueuedUnlink, _ looks: [Int64: TakenLook], _ db: Database
    ) throws -> (decided: UnlinkOutcome?, notTaken: String?)? {
        guard let owed = row.owed, let taken = looks[row.id], taken.owed == owed else { return nil }
        if let decided = taken.decided { return (decided, nil) }
        let file = taken.file
        (row.device, row.inode, row.stamp, row.owed) = (file.device, file.inode, file.stamp, nil)
        try db.cachedStatement(
            sql: """
                UPDATE unlink_queue SET device = ?, inode = ?, birth = ?, generation = ?, ctime = ?, identify = NULL
                WHERE id = ?
                """
        ).execute(arguments: [
            file.device, file.inode, file.stamp.birth, file.stamp.generation, file.stamp.ctime, row.id,
        ])
        // A row with no device was on no min_free step's count.
        queueRowsMoved.add(1, ordering: .relaxed)
        return (nil, taken.notTaken)
    }
}
