// A file a non-admin named while it was not there (control.enforce_ownership) was judged on
// the nearest folder that existed: the caller could create, or unlink, anything in it. It is
// found by name only when a rule deletes it, with no caller to judge it then, so it is
// identified only through that very folder (device, inode, owner and birth time, not its
// path: another user's folder renamed in place of it is not it), and only through folders
// below it that the caller owns (another user's folder made there later is not the caller's
// to empty). Anything else found there is not identified, so nothing is unlinked.

import GRDB

/// The judgement a registry row of a missing file keeps (`file.claim`).
struct MissingFileClaim: Equatable {
    var uid: UInt32
    var folder: FolderSeen

    init(uid: UInt32, folder: FolderSeen) {
        self.uid = uid
        self.folder = folder
    }

    /// From a checked probe's state of a missing file.
    init?(_ state: FileState) {
        guard !state.exists, let j = state.judgement, let folder = j.folder else { return nil }
        self.init(uid: j.uid, folder: folder)
    }

    /// As stored: "uid device inode owner birth", birth "-" when unknown.
    var text: String {
        "\(uid) \(folder.device) \(folder.inode) \(folder.owner) \(folder.birth.map(String.init) ?? "-")"
    }

    init?(text: String) {
        let f = text.split(separator: " ")
        guard f.count == 5, let uid = UInt32(f[0]), let device = Int64(f[1]), let inode = Int64(f[2]),
            let owner = UInt32(f[3])
        else { return nil }
        self.init(uid: uid, folder: FolderSeen(device: device, inode: inode, owner: owner, birth: Int64(f[4])))
    }

    /// Nil when the file the walk found is one this claim covers.
    func refusal(_ subject: UnlinkSubject) -> String? {
        guard subject.file != nil else { return "\(subject.path) is not there" }
        guard let at = subject.folders.firstIndex(where: { $0.isSame(as: folder) }) else {
            return "\(subject.path) is no longer below the folder it was judged on"
        }
        if subject.folders[(at + 1)...].contains(where: { $0.owner != uid }) {
            return "\(subject.path) is below a folder that is not uid \(uid)'s"
        }
        return nil
    }

    /// The claim of the registry row `id`, if any (a row being queued without a device).
    static func of(file id: Int64, _ db: Database) throws -> MissingFileClaim? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT claim FROM file WHERE id = ?"), arguments: [id])
            .flatMap(MissingFileClaim.init(text:))
    }
}

extension RegisteredFile {
    /// Registered before it existed: the file there now is the one the deleting commit meant,
    /// if `claim` (the row's, if any) covers it.
    mutating func identifyIfUnseen(_ roots: ManagedRoots, claim: MissingFileClaim?) {
        guard device == nil, let root = roots.root(of: path) else { return }
        let found: FileState?
        if let claim {
            let check = FileReferenceCheck(uid: claim.uid, owner: "", refusal: claim.refusal)
            found = try? FileProbe.probe(path: path, root: root, roots: roots, check: check)
        } else {
            found = FileProbe.identity(path: path, root: root, roots: roots)
        }
        guard let state = found, state.exists else { return }
        device = state.device
        inode = state.inode
        stamp = state.stamp
    }
}
