// verify's orphan phase: walks each managed root with openat/fdopendir and O_NOFOLLOW, on
// the root's mount only (no bind mount of the same filesystem either), looking at regular
// files alone; a file nothing registers, queues or leases, unchanged (mtime and ctime) for
// `orphanGrace`, is an orphan. Deleting one happens under the write lock (so nothing can
// register it meanwhile) with SafeUnlinker, which re-checks its identity, ordered against new
// leases as the sweep's unlinks are.

import Glibc
import GRDB
import JSON

/// A regular file found by the walk.
struct WalkedFile {
    /// Its path; nil when a name on the way is not UTF-8 (no registry row can name it).
    var path: String?
    /// Its path for people: invalid bytes as `\xHH`, never as another file's name.
    var display: String
    /// Its bytes when `path` is nil (a name on the way is not UTF-8).
    var bytes: [UInt8]?
    /// The root it is confined to (the outermost, for a file under a nested root).
    var root: String
    /// `st_dev` and `st_ino` when walked: the unlink checks them again.
    var device: Int64
    var inode: Int64
    /// Its birth time (or ctime) when walked: the unlink checks it too.
    var stamp: FileStamp
    /// Bytes.
    var size: Int64
    /// Modification time, Unix seconds.
    var mtime: Double

    /// When the file last changed as far as anyone can tell: its mtime, or its ctime if later.
    /// Tools that unpack or copy (tar, rsync -t, cp -p) set an old mtime on a new file; its
    /// ctime is when that happened, and only the kernel sets it.
    var changed: Double { max(mtime, stamp.ctime.map { Double($0) / 1e9 } ?? mtime) }
}

extension VerifyRun {
    /// Folders deeper than this below a root are not walked (each level holds a descriptor).
    static let maximumDepth = 128

    /// Files under the roots that nothing registers (`assetctl verify --orphans`, assetctl(1),
    /// COMMANDS).
    func orphans() throws {
        let phase = "orphans"
        // The reserve too (Store+Reserve.swift), and its file while being allocated.
        let own = Set(Store.ownSuffixes.map { Array((store.path + $0).utf8) })
        // A root's CACHEDIR.TAG marks the folder; it is never an orphan.
        let tags = Set(store.roots.paths.map { Array(($0 + "/" + CacheDirectoryTag.fileName).utf8) })
        let ownIDs = store.ownFileIDs()
        // Older than the grace by both clocks: a file written just before a step forward of the
        // wall clock (whose times step with it) is no older for it (ClockSteps.swift).
        let old = store.clocks.read().olderThan(store.configuration.orphanGrace)
        var batch = [WalkedFile]()
        var done = 0
        report(phase, 0, nil)
        func flush() throws {
            done += batch.count
            try judge(batch)
            batch = []
            report(phase, done, nil)
        }
        for root in store.roots.paths {
            try walk(root: root) { f in
                // The database and its companions may live under a root: never orphans.
                if let p = f.path, own.contains(Array(p.utf8)) || tags.contains(Array(p.utf8)) { return }
                // Nor is its marker (RootMarker.swift), which binds the root to this database.
                if let p = f.path, RootMarker.isMarker(p.utf8, roots: store.roots.paths) { return }
                // A root nested in another is walked as itself: each file is judged once.
                if let p = f.path, store.roots.nearestRoot(of: p) != root { return }
                if ownIDs.contains(FileID(device: f.device, inode: f.inode)) { return }
                guard old.isOld(f.changed) else { return }  // within the grace: maybe being written
                batch.append(f)
                if batch.count >= Store.verifyPage { try flush() }
            }
        }
        try flush()
    }

    /// Reports (and with `deleteOrphans` removes) the files of a batch nothing knows.
    private func judge(_ files: [WalkedFile]) throws {
        guard !files.isEmpty else { return }
        let unknown = try store.read { r in try Self.unknown(files, r.db, store) }
        guard !unknown.isEmpty else { return }
        var removed = [Int: RepairOutcome]()
        if options.deleteOrphans {
            removed = try Store.mapErrors {
                try store.pool.write { db in
                    // The commit that let a file go (its last edge dropped, no rule queueing it)
                    // must be on disk before the file is taken for an orphan: lost in a crash,
                    // it would come back naming a file no longer there. Refused after a
                    // failed sync, as the sweep is.
                    try store.makeDurable(writer: db)
                    // Again under the write lock: no transaction can register one meanwhile.
                    let still = Set(try Self.unknown(unknown, db, store).compactMap { $0.path.map { Array($0.utf8) } })
                    let registered = try Self.registeredInodes(unknown, db).union(movedInodes)
                    let unlinker = SafeUnlinker(roots: store.roots, own: store.ownFileIDs())
                    // With files.skip_open, an orphan some process has open (a download not yet
                    // registered) is kept like a queued file would be.
                    let probe = store.configuration.skipOpenFiles ? OpenFileProbe() : nil
                    var out = [Int: RepairOutcome]()
                    let old = store.clocks.read().olderThan(store.configuration.orphanGrace)
                    // After a restore: a file changed since the backup (within the grace before it,
                    // as the pass would have judged it then) may be a lost write's (Store+Restore.swift).
                    // `--since-backup` deletes them; the hold ends once this pass has gone through.
                    let heldAfter =
                        options.sinceBackup ? nil : store.orphansHeldAfter.map { $0 - store.configuration.orphanGrace }
                    for (i, f) in unknown.enumerated() {
                        if let heldAfter, f.changed >= heldAfter {
                            out[i] = .refused(
                                "changed since the restored backup was taken: maybe the file of a write the restore"
                                    + " lost; kept until `verify --delete-orphans --since-backup`")
                            continue
                        }
                        guard let path = f.path else {
                            out[i] = .refused("its name is not UTF-8")
                            continue
                        }
                        guard still.contains(Array(path.utf8)),
                            let now = try? FileProbe.probe(path: path, root: f.root, roots: store.roots),
                            now.exists,
                            now.device == f.device, now.inode == f.inode,
                            old.isOld(max(now.mtime ?? 0, now.stamp.ctime.map { Double($0) / 1e9 } ?? 0))
                        else {
                            out[i] = .vanished
                            continue
                        }
                        // A registered file moved here (its folder renamed): the registry names it
                        // by its old path, and verify's repair may have dropped that row just now.
                        // An inode number used again only keeps a file, the safe side.
                        guard !registered.contains(f.inode) else {
                            out[i] = .refused("a registered file has its inode number (moved here?)")
                            continue
                        }
                        store.state.withLock { $0.orphanUnlinkDecided }?(path)
                        // As in the sweep: a lease answered before this is seen, one asked for
                        // meanwhile is answered after the unlink.
                        let outcome = store.leases.unlessLeased(file: path) {
                            unlinker.unlink(
                                path: path, root: f.root, device: f.device, inode: f.inode, stamp: f.stamp,
                                size: f.size,
                                probe: probe)
                        }
                        switch outcome {
                        case nil: out[i] = .vanished  // leased: not an orphan
                        case .removed, .alreadyGone: out[i] = .repaired("removed")
                        case .identityChanged: out[i] = .vanished
                        case .unsafePath: out[i] = .refused("a symlink or a mount point is on the way")
                        case .notUnderRoot: out[i] = .refused("not under a configured root")
                        case .otherFilesystem(let why): out[i] = .refused(why)
                        case .failed(let e, let call): out[i] = .refused("\(call): \(errnoDescription(e))")
                        case .open: out[i] = .refused("a process has it open (files.skip_open)")
                        case .undetermined(let why): out[i] = .refused("cannot tell whether it is open: \(why)")
                        }
                    }
                    return out
                }
            }
        }
        for (i, f) in unknown.enumerated() {
            let o = removed[i]
            if case .vanished? = o { continue }
            // A name that is not UTF-8 is never given as `path`: read with U+FFFD for its
            // invalid bytes it could be another file's, a registered one, which someone
            // clearing orphans by hand from the report would delete.
            var subject: [String: JSONValue] = ["size": .int(f.size), "mtime": .double(f.mtime)]
            var name = f.display
            if let bytes = f.bytes {
                subject["path_bytes"] = .string(OrphanName.percentEncoded(bytes))
                name += " (its name is not UTF-8: invalid bytes shown as \\xHH)"
            } else {
                subject["path"] = .string(f.display)
            }
            let message = "\(name) is under a managed root but nothing registers it" + (o?.suffix ?? "")
            add("orphan", .object(subject), message, repaired: o?.repaired ?? false)
        }
    }

    /// The files no registry row names, no queued unlink names and no lease covers.
    private static func unknown(_ files: [WalkedFile], _ db: Database, _ store: Store) throws -> [WalkedFile] {
        let paths = JSONValue.array(files.compactMap { $0.path.map(JSONValue.string) }).serialized()
        let known = Set(
            try String.fetchAll(
                db,
                sql: """
                    SELECT path FROM file WHERE path IN (SELECT value FROM json_each(?1))
                    UNION SELECT path FROM unlink_queue WHERE path IN (SELECT value FROM json_each(?1))
                    """, arguments: [paths]
            ).map { Array($0.utf8) })
        let leased = store.leases.snapshot().files
        return files.filter { f in
            guard let p = f.path else { return true }
            let bytes = Array(p.utf8)
            return !known.contains(bytes) && !leased.contains(bytes)
        }
    }

    /// The inode numbers among `files`' that some registry row records, on any device (one
    /// renumbered since keeps its rows' old numbers).
    private static func registeredInodes(_ files: [WalkedFile], _ db: Database) throws -> Set<Int64> {
        let inodes = JSONValue.array(files.map { .int($0.inode) }).serialized()
        return Set(
            try Int64.fetchAll(
                db, sql: "SELECT DISTINCT inode FROM file WHERE inode IN (SELECT value FROM json_each(?))",
                arguments: [inodes]))
    }

    /// Calls `body` for every regular file below `root`, never following a symlink, never
    /// leaving the root's mount (a bind mount of the same filesystem is another mount).
    /// Unreadable folders are skipped.
    func walk(root: String, _ body: (WalkedFile) throws -> Void) throws {
        // The outermost root is configuration and trusted (as in SafeUnlinker); nothing below
        // it is, a nested root included: it is reached without following a symlink.
        // The folders on the way are passed through (O_PATH: searching them is enough, as for
        // the nested root's own path); only the root walked is read.
        let outer = store.roots.root(of: root) ?? root
        let below = ManagedRoots.components(of: root, below: outer)
        // Another folder than the one the root was when the store opened is not walked, and
        // says so: its orphans would otherwise go unreported without a word.
        var fd: Int32
        switch store.roots.pins.open(outer, flags: below.isEmpty ? O_RDONLY : SafeUnlinker.oPath) {
        case .folder(let opened): fd = opened
        case .moved(let why):
            add("root_moved", .object(["path": .string(outer)]), why, repaired: false)
            return
        case .failed(let e):
            if e == ENOENT { _ = rootMissing(outer) }
            return
        }
        // Each folder on the way O_PATH (nothing asked of its filesystem), and not on another
        // mount than the one above unless it is a configured root: nothing is looked up inside
        // another mount (a FUSE server need never answer: assetd(8), "The unlink queue").
        // A folder whose mount cannot be told is not walked below (fail closed).
        guard case .success(var above) = FileStatus.cached(fd, "") else {
            close(fd)
            return
        }
        var prefix = Array(outer.utf8)
        for c in below where fd >= 0 {
            let next = openat(fd, c, SafeUnlinker.oPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(fd)
            fd = next
            prefix += [UInt8(ascii: "/")] + Array(c.utf8)
            guard fd >= 0 else { break }
            guard case .success(let here) = FileStatus.cached(fd, "") else {
                close(fd)
                return
            }
            if here.onAnotherMount(than: above),
                !store.roots.paths.contains(where: { $0.utf8.elementsEqual(prefix) })
            {
                close(fd)
                return
            }
            above = here
        }
        guard fd >= 0 else { return }
        if !below.isEmpty {
            // The nested root itself, opened to read through its O_PATH descriptor.
            let opened = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            close(fd)
            fd = opened
            guard fd >= 0 else { return }
        }
        // The walked root's own mount is fine (it may be a mount point): only crossing below it is not.
        guard case .success(let mount) = FileStatus.of(fd, "") else {
            close(fd)
            return
        }
        // A root nested in this one is walked as itself, not here too: a file under it is judged
        // once, its name UTF-8 or not.
        let nested = Set(store.roots.paths.map { Array($0.utf8) }).subtracting([Array(root.utf8)])
        try walkFolder(fd, path: Array(root.utf8), root: outer, mount: mount, nested: nested, depth: 0, body)
    }

    /// Walks the open folder `fd` (and closes it).
    private func walkFolder(
        _ fd: Int32, path: [UInt8], root: String, mount: FileStatus, nested: Set<[UInt8]>, depth: Int,
        _ body: (WalkedFile) throws -> Void
    ) throws {
        guard let dir = fdopendir(fd) else {
            close(fd)
            return
        }
        defer { closedir(dir) }
        let dfd = dirfd(dir)
        while let entry = readdir(dir) {
            let name: [UInt8] = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if name == [46] || name == [46, 46] { continue }
            let cName = name.map { CChar(bitPattern: $0) } + [0]
            // From the kernel's cache: a mount here is asked nothing (a FUSE server need never
            // answer); a file on the root's mount is then looked at afresh for its size and times.
            guard case .success(var st) = FileStatus.cached(dfd, cName) else { continue }
            // Another mount here (a bind mount of the same filesystem, a tmpfs, a file mounted
            // over a name) is not ours to judge, nor to descend into.
            if st.onAnotherMount(than: mount) { continue }
            let full = path + [UInt8(ascii: "/")] + name
            switch st.kind {
            case S_IFDIR:
                guard depth < VerifyRun.maximumDepth, !nested.contains(full) else { continue }
                // O_PATH first, which opens nothing on a mount made since the statx; read only
                // once it is on the root's mount.
                let pathFD = openat(dfd, cName, SafeUnlinker.oPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard pathFD >= 0 else { continue }
                guard case .success(let opened) = FileStatus.cached(pathFD, ""), !opened.onAnotherMount(than: mount)
                else {
                    close(pathFD)
                    continue
                }
                let sub = openat(pathFD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                close(pathFD)
                guard sub >= 0 else { continue }
                try walkFolder(sub, path: full, root: root, mount: mount, nested: nested, depth: depth + 1, body)
            case S_IFREG:
                // Its size and times afresh, through a descriptor of the inode on the root's
                // mount (a mount over the name since is asked nothing).
                let fileFD = openat(dfd, cName, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
                guard fileFD >= 0 else { continue }
                defer { close(fileFD) }
                guard case .success(let here) = FileStatus.cached(fileFD, ""), !here.onAnotherMount(than: mount),
                    here.inode == st.inode, here.device == st.device,
                    case .success(let fresh) = FileStatus.of(fileFD, "")
                else { continue }
                st = fresh
                let valid = String(validating: full, as: UTF8.self)
                try body(
                    WalkedFile(
                        path: valid, display: valid ?? OrphanName.escaped(full), bytes: valid == nil ? full : nil,
                        root: root, device: st.device, inode: st.inode, stamp: st.stamp, size: st.size, mtime: st.mtime)
                )
            default:
                continue  // symlinks, fifos, sockets, devices: never reported, never followed
            }
        }
    }
}
