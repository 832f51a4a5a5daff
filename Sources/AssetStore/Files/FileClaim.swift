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
        // Split at the space's byte, not by Characters: the fields before the owner are ASCII,
        // and an owner is its bytes (one starting with a combining mark made one Character of
        // the space before it). By Characters this was about 28,000 instructions a claimed
        // file's look (docs/PERFORMANCE.md, Held files read again, 0.18 round).
        let f = text.utf8.split(separator: UInt8(ascii: " "), maxSplits: 8, omittingEmptySubsequences: false)
            .map(Substring.init)
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

/// How a queued file's look (`RegisteredFile.identify`) ended.
enum LookEnd: Equatable {
    /// Taken: the row names the file, or nothing.
    case done
    /// Not taken, the root away (not configured, not its pinned folder, not opened): a row
    /// being queued keeps what it recorded; a look taken again stays owed, with this outcome.
    case away(UnlinkOutcome)
    /// Ended on a transient error (`FileProbe.isTransient`): owed (`RegisteredFile.owed`).
    case transient(Int32)
    /// A look owed, taken again, that could not vouch for the file there (why): the row
    /// names no file, and the file is kept as another one.
    case notTaken(String)
}

extension RegisteredFile {
    /// Makes this row, being queued, name the file the deleting commit means: one registered
    /// before it existed is the one there now; one with a claim is the file there its claim
    /// covers, else nothing, or the one recorded while its root is away. A look that ends on
    /// a transient error knows nothing: the row then owes it (`owed`), naming no file, and
    /// the sweep takes it `again` (OwedLook.swift).
    @discardableResult
    mutating func identify(_ store: Store, claim: RowClaim, again: OwedLook? = nil) -> LookEnd {
        guard let root = store.roots.root(of: path) else { return .away(.notUnderRoot) }
        owed = nil
        if case .unidentifiable = claim {
            forget()
            return .done
        }
        if case .none = claim, device != nil { return .done }
        // The root itself not its pinned folder, or not opened (an admin's doing, not a
        // user's): a claimed file, which only the claimant's looks saw, is left to the sweep,
        // which keeps the row while the root is away; a look owed stays owed.
        if again != nil || claim != .none {
            switch store.roots.pins.open(root, flags: SafeUnlinker.oPath) {
            case .folder(let fd):
                // A pin accepts a disk mounted on the root or unmounted from it since: a look
                // owed on one filesystem is not taken on another, where a stale file of the
                // same name may be. Retried, then parked, as a file not where it was recorded.
                // Only a look taken again compares: the delete's own costs no statx more.
                let status = again == nil ? nil : FileStatus.of(fd, "")
                close(fd)
                if let again, let status {
                    switch status {
                    case .success(let s) where again.isRoot(s): break
                    case .failure(let e) where FileProbe.isTransient(e.code): return owe(e.code, claim, store, root)
                    default:
                        return .away(
                            .otherFilesystem(
                                "the root \(root) is not the folder it was when the look was owed "
                                    + "(a disk mounted or unmounted there?)"))
                    }
                }
            case .moved(let why): return .away(.failed(errno: ESTALE, call: "the look before the unlink (\(why))"))
            case .failed(let e):
                if FileProbe.isTransient(e) { return owe(e, claim, store, root) }
                return .away(.failed(errno: e, call: "the look before the unlink: open \(root)"))
            }
        }
        // Owed in another process, or the wall clock gone back since: what changed since the
        // look was owed cannot be told, so nothing is taken.
        let latest = again?.latestChange
        if again != nil, latest == nil {
            forget()
            return .notTaken("owed by another assetd process, or the wall clock went back since")
        }
        let check: FileReferenceCheck?
        if case .claim(let c) = claim {
            check = FileReferenceCheck(uid: c.uid, owner: c.owner) { s in
                c.refusal(s, deviceNow: { store.deviceNow($0, path: s.path) })
            }
        } else {
            check = nil
        }
        let state: FileState
        do {
            state = try FileProbe.probe(
                path: path, root: root, roots: store.roots, check: check, latestChange: latest, look: true,
                rootIs: again.map { a in { a.isRoot($0) } })
        } catch {
            if let e = error.transientErrno { return owe(e, claim, store, root) }
            // Anything else is nothing to unlink: a refusal, a symlink or a mount on the way,
            // not a regular file, a change since the look was owed, a folder renamed away as
            // the rule runs. The sweep does not judge, so a recorded inode kept here could be
            // unlinked under another user's name once the path is put back.
            forget()
            return again == nil ? .done : .notTaken(error.message)
        }
        if state.exists {
            take(state)
        } else {
            // Nothing there: gone only on the root's filesystem as it was when owed, which the
            // unlinker tells from the folder it finds the name missing in (as for any row).
            forget()
            if let again { device = again.rootDevice }
        }
        return .done
    }

    /// A look that ended on the transient `e`: owed, with the claim to judge it by; the row
    /// names no file meanwhile (an older assetd reads the identity alone).
    private mutating func owe(_ e: Int32, _ claim: RowClaim, _ store: Store, _ root: String) -> LookEnd {
        owed = (
            OwedLook(claim: claim, root: store.roots.pins.pin(of: root)),
            "the look before queueing: \(errnoDescription(e))"
        )
        forget()
        stamp = .none
        return .transient(e)
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
