// A non-admin's file (control.enforce_ownership) is judged when its call names it: on the
// folder holding it or, for a file not there yet, on the nearest folder that exists. The
// daemon unlinks it later for that caller's rules, by what is at its path then, which the
// registry row may have learned from a look no one judged (another user's put, an admin's, a
// file made after it was named). So the row keeps the judgement, its claim, and the file at
// its path is taken only through that very folder (device, inode, owner and birth time, not
// its path: another user's folder renamed in place of it is not it; and, unless it is the
// caller's own, its group, mode and ACL as judged), and only through folders below it that
// the caller owns (another user's folder made there later is not the caller's to empty).

import Glibc

/// The judgement a registry row of a non-admin's file keeps (`file.claim`).
struct FileClaim: Equatable {
    var uid: UInt32
    /// The owner name of the claimant's objects.
    var owner: String
    var folder: FolderSeen

    init(uid: UInt32, owner: String, folder: FolderSeen) {
        self.uid = uid
        self.owner = owner
        self.folder = folder
    }

    /// From a checked probe's state.
    init?(_ state: FileState) {
        guard let j = state.judgement, let folder = j.folder else { return nil }
        self.init(uid: j.uid, owner: j.owner, folder: folder)
    }

    /// As stored: "uid device inode owner group mode acl birth name", birth "-" when unknown,
    /// the owner name last (it may hold spaces).
    var text: String {
        let f = folder
        return
            "\(uid) \(f.device) \(f.inode) \(f.owner) \(f.group) \(f.mode) \(f.hasACL ? 1 : 0) \(f.birth.map(String.init) ?? "-") \(owner)"
    }

    init?(text: String) {
        let f = text.split(separator: " ", maxSplits: 8, omittingEmptySubsequences: false)
        guard f.count == 9, let uid = UInt32(f[0]), let device = Int64(f[1]), let inode = Int64(f[2]),
            let owner = UInt32(f[3]), let group = UInt32(f[4]), let mode = UInt32(f[5]), f[6] == "0" || f[6] == "1",
            f[7] == "-" || Int64(f[7]) != nil
        else { return nil }
        self.init(
            uid: uid, owner: String(f[8]),
            folder: FolderSeen(
                device: device, inode: inode, owner: owner, group: group, mode: mode, hasACL: f[6] == "1",
                birth: Int64(f[7])))
    }

    /// True when `seen`, on a later walk, is the folder judged: the same inode (a birth time
    /// compared where both have one; a device renumbered since maps by `deviceNow`) with the
    /// same owner, and, unless it is the claimant's own, the same group, mode and ACL.
    func isJudgedFolder(_ seen: FolderSeen, deviceNow: (Int64) -> Int64) -> Bool {
        let f = folder
        guard seen.device == f.device || seen.device == deviceNow(f.device), seen.inode == f.inode,
            seen.owner == f.owner, f.birth == nil || seen.birth == nil || f.birth == seen.birth
        else { return false }
        return f.owner == uid || (seen.group == f.group && seen.mode == f.mode && seen.hasACL == f.hasACL)
    }

    /// Nil when the file the walk found is one this claim covers.
    func refusal(_ subject: UnlinkSubject, deviceNow: (Int64) -> Int64) -> String? {
        guard let file = subject.file else { return "\(subject.path) is not there" }
        guard let at = subject.folders.firstIndex(where: { isJudgedFolder($0, deviceNow: deviceNow) }) else {
            return "\(subject.path) is not below the folder it was judged on, as it was"
        }
        if subject.folders[(at + 1)...].contains(where: { $0.owner != uid }) {
            return "\(subject.path) is below a folder that is not uid \(uid)'s"
        }
        // As when a file is named: in a sticky folder of another's, only the caller's own file;
        // and another name of it may be in another folder by now.
        if let parent = subject.folders.last, parent.mode & UInt32(S_ISVTX) != 0, parent.owner != uid,
            file.st_uid != uid
        {
            return "\(subject.path) is another user's file in a sticky folder"
        }
        if file.st_nlink > 1 && file.st_uid != uid { return "\(subject.path) has other links and is not uid \(uid)'s" }
        return nil
    }
}

/// A registry row's `claim` column.
enum RowClaim: Equatable {
    /// None: a file named by admins (or before claims were kept).
    case none
    /// A claim that cannot be read: never identified.
    case unidentifiable
    case claim(FileClaim)

    init(text: String?) {
        guard let text else {
            self = .none
            return
        }
        self = FileClaim(text: text).map(RowClaim.claim) ?? .unidentifiable
    }
}

extension RegisteredFile {
    /// Makes this row, being queued, name the file the deleting commit means: one registered
    /// before it existed is the one there now; one with a claim is the file there its claim
    /// covers, else nothing, or the one recorded while its root is away. Returns the errno
    /// when the look ended on a transient error (`FileProbe.isTransient`): nothing is known
    /// then, so the row keeps what it recorded and owes the look (`owed`), which the sweep
    /// takes again before the unlink.
    @discardableResult
    mutating func identify(_ store: Store, claim: RowClaim) -> Int32? {
        guard let root = store.roots.root(of: path) else { return nil }
        owed = nil
        switch claim {
        case .none:
            guard device == nil else { return nil }
            let state: FileState
            do {
                state = try FileProbe.probe(path: path, root: root, roots: store.roots)
            } catch {
                // Anything but a transient error (a symlink or a mount on the way, not a
                // regular file): nothing there to take, the recorded nothing kept.
                return owe(error.transientErrno, claim)
            }
            take(state)
        case .unidentifiable:
            forget()
        case .claim(let c):
            // The root itself not its pinned folder, or not opened (an admin's doing, not a
            // user's): the recorded file, which only the claimant's looks saw, is left to the
            // sweep, which keeps the row while the root is away.
            switch store.roots.pins.open(root, flags: SafeUnlinker.oPath) {
            case .folder(let fd): close(fd)
            case .moved: return nil
            case .failed(let e): return owe(FileProbe.isTransient(e) ? e : nil, claim)
            }
            // Below it, anything but a file the claim covers (a refusal, nothing there, a
            // symlink, a folder renamed away as the rule runs) is nothing to unlink: the sweep
            // does not judge, so a recorded inode kept here could be unlinked under another
            // user's name once the path is put back. A transient error is none of these.
            let check = FileReferenceCheck(uid: c.uid, owner: c.owner) { c.refusal($0, deviceNow: store.deviceNow) }
            let state: FileState
            do {
                state = try FileProbe.probe(path: path, root: root, roots: store.roots, check: check)
            } catch {
                if let e = error.transientErrno { return owe(e, claim) }
                forget()
                return nil
            }
            guard state.exists else {
                forget()
                return nil
            }
            take(state)
        }
        return nil
    }

    /// A look that ended on `e`, if transient: owed, with the claim to judge it by.
    private mutating func owe(_ e: Int32?, _ claim: RowClaim) -> Int32? {
        guard let e else { return nil }
        owed = (claim.owedText, "the look before queueing: \(errnoDescription(e))")
        return e
    }

    /// No file to unlink: the queue row's NULL identity matches none.
    private mutating func forget() {
        device = nil
        inode = nil
    }

    private mutating func take(_ state: FileState) {
        guard state.exists else { return }
        device = state.device
        inode = state.inode
        stamp = state.stamp
    }
}

extension RowClaim {
    /// As a queue row that owes its file's look keeps it (`unlink_queue.identify`): "" for
    /// none, else the claim's text.
    var owedText: String {
        switch self {
        case .none: return ""
        case .claim(let c): return c.text
        case .unidentifiable: return "-"  // never owed: never looked at
        }
    }

    /// From `owedText`.
    init(owedText: String) { self = owedText.isEmpty ? .none : RowClaim(text: owedText) }
}
