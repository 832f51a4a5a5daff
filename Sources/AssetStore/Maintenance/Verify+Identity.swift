// verify's look at each registered file that is there (assetd(8), "The unlink queue"): whether
// it is still the file registered, as the unlinker judges it, and whether its path is below
// a configured root at all. A root copied (cp -a, rsync -a) and put in place holds other
// inodes at the registered paths: every delete would then keep its file as identity_changed.
// `relearn` (with repair, admins only) adopts the file now at a path only when its size and
// modification time are the registered ones and nothing else names it.

import GRDB
import Glibc
import JSON

/// What the registry recorded of a file seen on disk, as verify read it.
struct RecordedFile {
    var id: Int64
    var path: String
    var size: Int64
    var mtime: Double?
    var device: Int64
    var inode: Int64
    var stamp: FileStamp
    var claim: String?

    /// Whether `state`, the file at the path now, is this one as the unlinker judges it
    /// (SafeUnlinker.swift): the same device (or its number now) and inode, and a stamp
    /// that matches. A generation recorded but not readable now is left out rather than
    /// taken for another file.
    func isSame(_ state: FileState, deviceNow: Int64) -> Bool {
        guard let d = state.device, let i = state.inode, d == device || d == deviceNow, i == inode else {
            return false
        }
        var expected = stamp
        if state.stamp.generation == nil { expected.generation = nil }
        return expected.matches(state.stamp, size: size, sizeNow: state.size)
    }
}

/// Per root (the most specific one a file is below), files compared and found changed.
struct RootIdentities {
    var checked = 0
    var changed = 0
    var relearned = 0
}

extension VerifyRun {
    /// Tallies `r`, found at its path as `state`, under its root; true when it is not the
    /// file registered and a delete would keep it. A file a non-admin named
    /// (enforce_ownership) is taken at its delete as far as its claim covers the file there
    /// (FileClaim.swift): one its claim covers is no problem.
    func identityChanged(_ r: RecordedFile, _ state: FileState) -> Bool {
        let root = store.roots.nearestRoot(of: r.path) ?? ""
        identities[root, default: RootIdentities()].checked += 1
        if r.isSame(state, deviceNow: store.deviceNow(r.device)) { return false }
        let claim = RowClaim(text: r.claim)
        if claim != .none {
            var file = RegisteredFile(path: r.path, size: r.size, device: r.device, inode: r.inode, stamp: r.stamp)
            switch file.identify(store, claim: claim) {
            case .done where file.device != nil: return false
            case .transient, .away: return false  // cannot tell now
            default: break
            }
        }
        identities[root, default: RootIdentities()].changed += 1
        return true
    }

    /// Reports a page's changed files, one problem each; with `relearn`, adopts those that
    /// may be (`WriteTransaction.relearnFile`).
    func reportChanged(_ files: [RecordedFile]) throws {
        var outcome = [Int64: RepairOutcome]()
        if options.repair && options.relearn {
            let byID = Dictionary(uniqueKeysWithValues: files.map { ($0.id, $0) })
            outcome = try repairEach(files.map(\.id)) { tx, id in try tx.relearnFile(byID[id]!) }
        }
        for f in files {
            let o = outcome[f.id]
            if case .vanished? = o { continue }
            if o?.repaired == true {
                identities[store.roots.nearestRoot(of: f.path) ?? "", default: RootIdentities()].relearned += 1
            }
            let hint = options.relearn ? "" : "; `verify --repair --relearn` adopts it if its size and mtime match"
            add(
                "identity_changed", .object(["path": .string(f.path)]),
                "\(f.path) is not the file registered (another inode or birth time): a delete would keep it"
                    + (o.map(\.suffix) ?? hint), repaired: o?.repaired ?? false)
        }
    }

    /// One problem per root where at least two files, and at least half of those compared,
    /// are not the ones registered: listed first, whatever the limit.
    func identitySummaries() {
        for (root, t) in identities.sorted(by: { $0.key < $1.key }) where t.changed >= 2 && t.changed * 2 >= t.checked {
            let repaired = options.relearn && t.relearned == t.changed
            var message =
                "\(t.changed) of \(t.checked) files under \(root) are not the ones registered: was the root copied"
                + " (cp -a, rsync -a)? Deletes keep such files (identity_changed)"
            if options.relearn && options.repair {
                message += "; \(t.relearned) were relearned, \(t.changed - t.relearned) not"
            } else {
                message += "; `verify --repair --relearn` adopts those whose size and mtime match (assetd(8))"
            }
            addFirst(
                "root_identity_changed",
                .object([
                    "path": .string(root), "changed": .int(Int64(t.changed)), "checked": .int(Int64(t.checked)),
                ]), message, repaired: repaired)
        }
    }

    // MARK: root_unconfigured

    /// Counts a referenced file below no configured root, in the group of its folder: groups
    /// merge up to the folder they share, unless that is `/`, a top folder, or holds a
    /// configured root (the files of a removed root are reported by their common folder).
    func noteUnconfigured(_ path: String) {
        let folder = Self.folder(of: path)
        if let i = unconfigured.firstIndex(where: { Self.isBelow(folder, $0.prefix) }) {
            unconfigured[i].files += 1
            return
        }
        for i in unconfigured.indices {
            let common = Self.commonFolder(folder, unconfigured[i].prefix)
            guard common.utf8.count(where: { $0 == UInt8(ascii: "/") }) >= 2,
                !store.roots.paths.contains(where: { Self.isBelow($0, common) })
            else { continue }
            unconfigured[i].prefix = common
            unconfigured[i].files += 1
            return
        }
        // Bounded: a store whose files are under thousands of unrelated folders gets one line more.
        if unconfigured.count >= 1000 {
            unconfigured[unconfigured.count - 1].prefix = "/"
            unconfigured[unconfigured.count - 1].files += 1
            return
        }
        unconfigured.append((folder, 1))
    }

    /// One `root_unconfigured` problem per group `noteUnconfigured` made.
    func unconfiguredProblems() {
        for g in unconfigured {
            addFirst(
                "root_unconfigured", .object(["path": .string(g.prefix), "files": .int(Int64(g.files))]),
                "\(g.files) registered \(g.files == 1 ? "file is" : "files are") under \(g.prefix), below no configured"
                    + " root (a root removed from files.roots?): not checked, and never unlinked (a delete parks"
                    + " them); put the root back in files.roots, or delete their holders and the files by hand",
                repaired: false)
        }
    }

    /// The folder holding `path` (normalised, absolute).
    static func folder(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// True when `path` is `folder` or below it.
    static func isBelow(_ path: String, _ folder: String) -> Bool {
        folder == "/" || path == folder || path.utf8.starts(with: (folder + "/").utf8)
    }

    /// The deepest folder both are in.
    static func commonFolder(_ a: String, _ b: String) -> String {
        let x = a.split(separator: "/"), y = b.split(separator: "/")
        let n = zip(x, y).prefix { $0 == $1 }.count
        return "/" + x.prefix(n).joined(separator: "/")
    }
}

extension WriteTransaction {
    /// verify's relearn of a changed file (`relearn`, admins only; assetd(8), "Moving a
    /// root"): the file now at the path becomes the registered one if the row is still as
    /// verify read it, no user claimed it, and the file, reached beneath its root without a
    /// symlink or a mount, is a regular file with the registered size and modification time
    /// and no other name (a link made at the path is not adopted). Anything else is refused.
    func relearnFile(_ r: RecordedFile) throws -> RepairOutcome {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT size, mtime, device, inode, birth, generation, ctime, claim FROM file WHERE id = ?"),
                arguments: [r.id]),
            row[0] as Int64 == r.size, row[1] as Double? == r.mtime, row[2] as Int64? == r.device,
            row[3] as Int64? == r.inode, FileStamp(birth: row[4], generation: row[5], ctime: row[6]) == r.stamp,
            row[7] as String? == r.claim
        else { return .vanished }  // measured again since (a put): the put took the file there
        if r.claim != nil {
            return .refused(
                "a user named it (enforce_ownership) and its claim does not cover the file there: only that user's"
                    + " put takes it again")
        }
        guard let state = VerifyRun.look(r.path, store) else {
            return .refused(
                "it is leased, or cannot be looked at below its root now (a symlink or a mount on the way?)")
        }
        guard state.exists else { return .vanished }  // the next verify reports it missing
        if r.isSame(state, deviceNow: store.deviceNow(r.device)) { return .vanished }
        guard let mtime = r.mtime, state.size == r.size, state.mtime == mtime else {
            return .refused("its size or modification time is not the registered one's: not adopted")
        }
        var st = stat()
        guard fstatat(AT_FDCWD, r.path, &st, AT_SYMLINK_NOFOLLOW) == 0,
            Int64(bitPattern: UInt64(st.st_dev)) == state.device, Int64(bitPattern: UInt64(st.st_ino)) == state.inode
        else { return .vanished }  // changed as we looked
        guard st.st_nlink == 1 else { return .refused("it has other names (hard links): not adopted") }
        do {
            try refuseStoreFile(r.path, state)
        } catch {
            return .refused(error.message)
        }
        try db.cachedStatement(
            sql: "UPDATE file SET device = ?, inode = ?, birth = ?, generation = ?, ctime = ? WHERE id = ?"
        )
        .execute(arguments: [
            state.device, state.inode, state.stamp.birth, state.stamp.generation, state.stamp.ctime, r.id,
        ])
        try SharedFiles.note(try fileStatements().note, id: r.id, inode: state.inode, device: state.device)
        rowLeft(inode: r.inode, device: r.device)
        return .repaired("the file there now, of the registered size and mtime, was recorded as the registered one")
    }
}
