// verify's look at each registered file that is there (assetd(8), "The unlink queue"): whether
// it is still the file registered, as the unlinker judges it, and whether its path is below
// a configured root at all. A root copied (cp -a, rsync -a) and put in place holds other
// inodes at the registered paths: every delete would then keep its file as identity_changed.
// `relearn ROOT` (with repair, admins only) adopts the file now at a path below that root only
// when its size and modification time are the registered ones, nothing else names it, and no
// one but its owner, assetd's user or root could have put it there (every folder on its way).

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
    /// What verify found not as recorded (`difference(_:deviceNow:)`).
    var whatDiffers: String?

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

    /// True when `state` is on another file system than the one recorded (nor its number
    /// now): the unlinker keeps such a file as `other_filesystem` (one not mounted there?).
    func onOtherDevice(_ state: FileState, deviceNow: Int64) -> Bool {
        guard let d = state.device else { return false }
        return d != device && d != deviceNow
    }

    /// What of `state` is not as recorded, for a message: the field that differs first.
    func difference(_ state: FileState, deviceNow: Int64) -> String {
        if onOtherDevice(state, deviceNow: deviceNow) {
            return "on another file system than recorded (device \(state.device ?? 0), not \(device)): the one"
                + " recorded not mounted there? A delete keeps it (other_filesystem)"
        }
        if state.inode != inode { return "another inode: a delete would keep it" }
        if stamp.birth != nil && stamp.birth != state.stamp.birth {
            return "another birth time: a delete would keep it"
        }
        if stamp.generation != nil && state.stamp.generation != nil && stamp.generation != state.stamp.generation {
            return "another inode generation: a delete would keep it"
        }
        return "its ctime or size changed since it was recorded (no birth time or generation here): a delete"
            + " would keep it"
    }
}

/// Per root (the most specific one a file is below), files compared and found changed.
struct RootIdentities {
    var checked = 0
    var changed = 0
    var relearned = 0
}

extension VerifyRun {
    /// Tallies `r`, found at its path as `state`, under its root: what differs when it is not
    /// the file registered and a delete would keep it, else nil. A file a non-admin named
    /// (enforce_ownership) is taken at its delete as far as its claim covers the file there
    /// (FileClaim.swift): one its claim covers is no problem.
    func identityChanged(_ r: RecordedFile, _ state: FileState) -> String? {
        let root = store.roots.nearestRoot(of: r.path) ?? ""
        identities[root, default: RootIdentities()].checked += 1
        let deviceNow = store.deviceNow(r.device, path: r.path)
        if r.isSame(state, deviceNow: deviceNow) { return nil }
        let claim = RowClaim(text: r.claim)
        if claim != .none {
            var file = RegisteredFile(path: r.path, size: r.size, device: r.device, inode: r.inode, stamp: r.stamp)
            switch file.identify(store, claim: claim) {
            case .done where file.device != nil: return nil
            case .transient, .away: return nil  // cannot tell now
            default: break
            }
        }
        identities[root, default: RootIdentities()].changed += 1
        return r.difference(state, deviceNow: deviceNow)
    }

    /// Reports a page's changed files, one problem each; with `relearn`, adopts those below
    /// the root it names that may be (`WriteTransaction.relearnFile`).
    func reportChanged(_ files: [RecordedFile]) throws {
        var outcome = [Int64: RepairOutcome]()
        if options.repair, let root = options.relearn {
            let mine = files.filter { store.roots.nearestRoot(of: $0.path) == root }
            let byID = Dictionary(uniqueKeysWithValues: mine.map { ($0.id, $0) })
            outcome = try repairEach(mine.map(\.id)) { tx, id in try tx.relearnFile(byID[id]!) }
        }
        for f in files {
            let o = outcome[f.id]
            if case .vanished? = o { continue }
            if o?.repaired == true {
                identities[store.roots.nearestRoot(of: f.path) ?? "", default: RootIdentities()].relearned += 1
            }
            // Files under other roots than the one relearnt were not tried: they keep the hint.
            let hint = "; `verify --repair --relearn ROOT` adopts it if its size and mtime match"
            add(
                "identity_changed", .object(["path": .string(f.path)]),
                "\(f.path) is not the file registered, \(f.whatDiffers ?? "changed")" + (o.map(\.suffix) ?? hint),
                repaired: o?.repaired ?? false)
        }
    }

    /// One problem per root where at least two files, and at least half of those compared,
    /// are not the ones registered: listed first, whatever the limit.
    func identitySummaries() {
        for (root, t) in identities.sorted(by: { $0.key < $1.key }) where t.changed >= 2 && t.changed * 2 >= t.checked {
            let relearned = options.repair && options.relearn == root
            let repaired = relearned && t.relearned == t.changed
            var message =
                "\(t.changed) of \(t.checked) files under \(root) are not the ones registered: was the root copied"
                + " (cp -a, rsync -a)? Deletes keep such files (identity_changed)"
            if relearned {
                message += "; \(t.relearned) were relearned, \(t.changed - t.relearned) not"
            } else {
                message += "; `verify --repair --relearn \(root)` adopts those whose size and mtime match (assetd(8))"
            }
            addFirst(
                "root_identity_changed",
                .object([
                    "path": .string(root), "changed": .int(Int64(t.changed)), "checked": .int(Int64(t.checked)),
                ]), message, repaired: repaired)
        }
    }

    // MARK: root_unconfigured

    /// Counts a referenced file below no configured root, in the group of the highest folder
    /// above it that is not `/` and holds no configured root (the files of a removed root,
    /// sharded or not, are one group); the group is reported by the deepest folder its files
    /// share. A folder's group is looked up once (`unconfiguredKeys`), bounded.
    func noteUnconfigured(_ path: String) {
        let folder = Self.folder(of: path)
        let key: String
        if let known = unconfiguredKeys[folder] {
            key = known
        } else {
            key = groupKey(folder)
            if unconfiguredKeys.count >= 4096 { unconfiguredKeys.removeAll(keepingCapacity: true) }
            unconfiguredKeys[folder] = key
        }
        if let g = unconfigured[key] {
            let common = Self.isBelow(folder, g.prefix) ? g.prefix : Self.commonFolder(folder, g.prefix)
            unconfigured[key] = (common, g.files + 1)
        } else if unconfigured.count < 1000 {
            unconfigured[key] = (folder, 1)
        } else {
            unconfiguredElsewhere += 1  // bounded: counted in the "more folders" line
        }
    }

    /// The highest folder above `folder` (or itself) other than `/` holding no configured root.
    private func groupKey(_ folder: String) -> String {
        var prefix = ""
        for name in folder.utf8.split(separator: UInt8(ascii: "/")) {
            prefix += "/" + String(Substring(name))
            if !store.roots.paths.contains(where: { Self.isBelow($0, prefix) }) { return prefix }
        }
        return folder
    }

    /// One `root_unconfigured` problem per group `noteUnconfigured` made, the largest first,
    /// at most `unconfiguredListed`, and one for the rest; each counted against the limit.
    func unconfiguredProblems() {
        let groups = unconfigured.values.sorted { ($0.files, $1.prefix) > ($1.files, $0.prefix) }
        for g in groups.prefix(Self.unconfiguredListed) {
            addFirst(
                "root_unconfigured", .object(["path": .string(g.prefix), "files": .int(Int64(g.files))]),
                "\(g.files) registered \(g.files == 1 ? "file is" : "files are") under \(g.prefix), below no configured"
                    + " root (a root removed from files.roots?): not checked, and never unlinked (a delete parks"
                    + " them); put the root back in files.roots, or delete their holders and the files by hand",
                repaired: false, bounded: true)
        }
        let rest = groups.dropFirst(Self.unconfiguredListed)
        let files = rest.reduce(unconfiguredElsewhere) { $0 + $1.files }
        guard files > 0 else { return }
        let folders = rest.count + (unconfiguredElsewhere > 0 ? 1 : 0)
        let subject: JSONValue = .object([
            "path": .null, "files": .int(Int64(files)), "folders": .int(Int64(folders)),
        ])
        addFirst(
            "root_unconfigured", subject,
            "\(files) registered files more are below no configured root, in \(rest.count)"
                + "\(unconfiguredElsewhere > 0 ? "+" : "") more folders", repaired: false, bounded: true)
    }

    /// Groups of unconfigured files listed one by one (`unconfiguredProblems`).
    static let unconfiguredListed = 20

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
    /// verify's relearn of a changed file (`relearn ROOT`, admins only; assetd(8), "Moving a
    /// root"): the file now at the path becomes the registered one if the row is still as
    /// verify read it, no user claimed it, and the file, reached beneath its root without a
    /// symlink or a mount, is a regular file with the registered size and modification time
    /// and no other name (a link made at the path is not adopted), on the recorded file
    /// system or, the whole root moved, from a root's own, and every folder on its way is
    /// root's, assetd's user's or the file's owner's and writable by its owner alone: else
    /// another user could have renamed folders to bring a victim's file of that size and
    /// mtime to the path, for a later delete to unlink. Anything else is refused.
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
        guard let root = store.roots.root(of: r.path), !store.leases.snapshot().files.contains(Array(r.path.utf8))
        else { return .refused("it is leased, or below no configured root now") }
        let me = geteuid()
        let check = FileReferenceCheck(uid: me, owner: "") { Self.relearnRefusal($0, assetd: me) }
        let state: FileState
        do {
            state = try FileProbe.probe(path: r.path, root: root, roots: store.roots, check: check)
        } catch {
            return .refused("\(error.message): not adopted")
        }
        guard state.exists else { return .vanished }  // the next verify reports it missing
        let deviceNow = store.deviceNow(r.device, path: r.path)
        if r.isSame(state, deviceNow: deviceNow) { return .vanished }
        guard let mtime = r.mtime, state.size == r.size, state.mtime == mtime else {
            return .refused("its size or modification time is not the registered one's: not adopted")
        }
        // A file recorded on a disk mounted below the root, now not mounted: what is at the
        // path is on the root's file system (a stale copy in the mount point), not the file.
        if r.onOtherDevice(state, deviceNow: deviceNow),
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM root_device WHERE device = ?)"),
                arguments: [r.device]) != true
        {
            return .refused(
                "it is on another file system than recorded, and the one recorded was no root's own (a disk below"
                    + " the root not mounted?): not adopted")
        }
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

    /// Nil when relearn may adopt the file the walk found (`relearnFile`): one name, and every
    /// folder from the root down root's, assetd's user's (`assetd`) or the file's owner's,
    /// with no group or other write bit (sticky or not: a sticky folder still lets anyone
    /// rename their own folder into it) and no ACL. The file's nlink is the walk's own fstat.
    static func relearnRefusal(_ s: UnlinkSubject, assetd: UInt32) -> String? {
        guard let file = s.file else { return nil }
        if file.st_nlink != 1 { return "it has other names (hard links)" }
        for f in s.folders {
            if f.owner != 0 && f.owner != assetd && f.owner != file.st_uid {
                return "a folder on its way is uid \(f.owner)'s, not root's, assetd's or the file's owner's"
                    + " (uid \(file.st_uid)): another user could have moved the file there"
            }
            if f.mode & 0o022 != 0 || f.hasACL {
                return "a folder on its way is writable by others than its owner (group or other write, or an ACL):"
                    + " another user could have moved the file there"
            }
        }
        return nil
    }
}
