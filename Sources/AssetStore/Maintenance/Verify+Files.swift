// verify's registry phases: files objects hold that are gone from disk, and registry rows
// no edge references. Disk is probed outside any transaction (never through a symlink);
// each repair probes again under the write lock, so a file that came back is left alone.

import Glibc
import GRDB
import JSON

extension VerifyRun {
    /// Registered files some object holds that are gone from disk. A file referenced before it
    /// existed (never seen, so no device recorded) counts only once `orphanGrace` has passed
    /// since it was first seen: until then it is a download in flight. A leased file, a path
    /// with a symlink on the way or something other than a regular file at it is not "missing"
    /// and is left to other checks. Repair: every edge to the file goes as "destination
    /// deleted", so the holders' rules fire (verify with repair, assetd(8), CONTROL PROTOCOL,
    /// Methods), and the row goes with them.
    ///
    /// The same look tells a file that is there but not the one registered (`identity_changed`,
    /// Verify+Identity.swift) and counts the files below no configured root (`root_unconfigured`).
    func missingFiles() throws {
        let (old, since) = store.clocks.read().olderThan(store.configuration.orphanGrace).sql("f.first_seen")
        try scan(
            "missing_files",
            count:
                "SELECT COUNT(*) FROM file f WHERE EXISTS (SELECT 1 FROM edge e WHERE e.is_file = 1 AND e.dst = f.id)",
            page: """
                SELECT f.id, f.path, f.device IS NOT NULL OR (\(old)), f.device, f.inode, f.size, f.mtime, f.birth,
                    f.generation, f.ctime, f.claim FROM file f
                WHERE f.id > ? AND EXISTS (SELECT 1 FROM edge e WHERE e.is_file = 1 AND e.dst = f.id)
                ORDER BY f.id LIMIT ?
                """, arguments: since.map { $0 as (any DatabaseValueConvertible)? }
        ) { page in
            var missing = [(id: Int64, path: String)]()
            var changed = [RecordedFile]()
            let leased = store.leases.snapshot().files
            for row in page {
                let path: String = row[1]
                let roots = store.roots.roots(of: path)
                if roots.isEmpty {
                    noteUnconfigured(path)
                    continue
                }
                guard row[2] as Bool, !roots.contains(where: rootMissing),
                    let state = Self.look(path, store, leased: leased)
                else { continue }
                let device: Int64? = row[3]
                if !state.exists {
                    guard Self.isGone(path, device: device, store) else { continue }
                    missing.append((row[0], path))
                    if let inode: Int64 = row[4] { movedInodes.insert(inode) }
                } else if let device, let inode: Int64 = row[4] {
                    var recorded = RecordedFile(
                        id: row[0], path: path, size: row[5], mtime: row[6], device: device, inode: inode,
                        stamp: FileStamp(birth: row[7], generation: row[8], ctime: row[9]), claim: row[10])
                    recorded.whatDiffers = identityChanged(recorded, state)
                    if recorded.whatDiffers != nil { changed.append(recorded) }
                }
            }
            if !missing.isEmpty { try repairMissing(missing) }
            if !changed.isEmpty { try reportChanged(changed) }
        }
        identitySummaries()
        unconfiguredProblems()
    }

    /// Whether `root` is missing (reported once a run as `root_missing`): its files are then
    /// not judged. Renamed away on its own file system they are all still there, and a
    /// repair would have deleted every edge to them and let their holders' rules run.
    func rootMissing(_ root: String) -> Bool {
        if let known = rootsMissing[root] { return known }
        var st = stat()
        let missing = stat(root, &st) != 0 && errno == ENOENT
        rootsMissing[root] = missing
        if missing {
            add(
                "root_missing", .object(["path": .string(root)]),
                "the root \(root) is missing (renamed or removed?): the files under it were not checked",
                repaired: false)
        }
        return missing
    }

    /// True when nothing is at `path` now and no lease covers it (`leased`: the leased
    /// paths as bytes, by default read now). A file recorded on `device` is missing only if
    /// the deepest folder of its path that exists is on that device too: otherwise its
    /// filesystem is not mounted there now, and the file is hidden, not gone.
    static func isMissing(_ path: String, device: Int64?, _ store: Store, leased: Set<[UInt8]>? = nil) -> Bool {
        guard let state = look(path, store, leased: leased), !state.exists else { return false }
        return isGone(path, device: device, store)
    }

    /// What is at `path` now, below its root; nil when it is leased, below no configured
    /// root, or cannot be told (a symlink or a mount on the way, not a regular file, an error).
    static func look(_ path: String, _ store: Store, leased: Set<[UInt8]>? = nil) -> FileState? {
        guard let root = store.roots.root(of: path),
            !(leased ?? store.leases.snapshot().files).contains(Array(path.utf8))
        else { return nil }
        return try? FileProbe.probe(path: path, root: root, roots: store.roots)
    }

    /// For a path nothing is at: whether its file is gone, not hidden (`isMissing`).
    static func isGone(_ path: String, device: Int64?, _ store: Store) -> Bool {
        guard let root = store.roots.root(of: path) else { return false }
        // A root missing itself says nothing about its files (as the sweep judges it).
        guard let folderDevice = deepestFolderDevice(path, root: root, roots: store.roots) else { return false }
        guard let device else { return true }  // never seen on disk: nothing could hide it
        return SafeUnlinker.isGone(
            folderDevice: folderDevice, device: device, deviceNow: store.deviceNow(device, path: path))
    }

    /// The device of the deepest folder below the root on the way to `path` that exists; nil
    /// when the root itself cannot be looked at, or a root nested on the way is missing or
    /// not a folder now (moved away with its files: they are hidden, not gone). Folder by
    /// folder on O_PATH descriptors, from the kernel's cache, and none below another mount but
    /// a nested root's: nothing is asked of a mount below the root (a FUSE server need never
    /// answer; assetd(8), "The unlink queue").
    static func deepestFolderDevice(_ path: String, root: String, roots: ManagedRoots) -> Int64? {
        var fd = open(root, SafeUnlinker.oPath | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard case .success(var above) = FileStatus.of(fd, "") else { return nil }
        var device = above.device
        var prefix = Array(root.utf8)
        for folder in ManagedRoots.components(of: path, below: root).dropLast() {
            prefix += [UInt8(ascii: "/")] + Array(folder.utf8)
            let nested = roots.isRoot(prefix)
            let next = openat(fd, folder, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else { return nested ? nil : device }
            close(fd)
            fd = next
            guard case .success(let st) = FileStatus.cached(fd, ""), st.kind == S_IFDIR else {
                return nested ? nil : device
            }
            device = st.device
            if st.onAnotherMount(than: above), !nested { break }
            above = st
        }
        return device
    }

    private func repairMissing(_ files: [(id: Int64, path: String)]) throws {
        // Holders are read before the repair, which deletes the edges naming them.
        let ids = JSONValue.array(files.map { .int($0.id) }).serialized()
        let holders: [Int64: [ObjectRef]] = try store.read { r in
            var out = [Int64: [ObjectRef]]()
            for row in try Row.fetchAll(
                r.db,
                sql: """
                    SELECT DISTINCT e.dst, o.collection, o.key FROM edge e JOIN object o ON o.id = e.src
                    WHERE e.is_file = 1 AND e.dst IN (SELECT value FROM json_each(?)) ORDER BY e.dst, o.collection, o.key
                    """, arguments: [ids])
            {
                out[row[0], default: []].append(ObjectRef(row[1], row[2]))
            }
            return out
        }
        var outcome = [Int64: RepairOutcome]()
        if options.repair {
            outcome = try repairEach(files.map(\.id)) { tx, id in try tx.removeMissingFile(id) }
        }
        for f in files {
            let o = outcome[f.id]
            if case .vanished? = o { continue }
            for ref in holders[f.id] ?? [] {
                add(
                    "missing_file",
                    .object([
                        "collection": .string(ref.collection), "key": .string(ref.key), "path": .string(f.path),
                    ]), "\(ref) holds \(f.path), which no longer exists" + (o?.suffix ?? ""),
                    repaired: o?.repaired ?? false)
            }
        }
    }

    /// Registry rows that no edge references (the engine drops a row with its last edge, so
    /// one left over is a defect). Repair: a row that recorded the file's identity is queued
    /// for unlinking exactly as when the last reference goes (same transaction, device and
    /// inode re-checked before the unlink, a later reference cancels it); the file is managed
    /// and nobody holds it. A row that never saw the file (no device, inode) is only dropped:
    /// with nothing to check the file at the path against, unlinking it would be a guess.
    func unreferencedFiles() throws {
        let phase = "unreferenced_files"
        let total = try store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM file") ?? 0 }
        var after: Int64 = 0
        var scanned: Int64 = 0
        report(phase, 0, total)
        while true {
            let (page, upTo) = try store.read { r in
                let upTo = try Int64.fetchOne(
                    r.db, sql: "SELECT id FROM file WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
                    arguments: [after, Store.verifyPage - 1])
                let page = try Row.fetchAll(
                    r.db,
                    sql: """
                        SELECT f.id, f.path FROM file f WHERE f.id > ? AND f.id <= ?
                        AND NOT EXISTS (SELECT 1 FROM edge e WHERE e.is_file = 1 AND e.dst = f.id) ORDER BY f.id
                        """, arguments: [after, upTo ?? Int64.max])
                let counted = try Int64.fetchOne(
                    r.db, sql: "SELECT COUNT(*) FROM file WHERE id > ? AND id <= ?",
                    arguments: [after, upTo ?? Int64.max])
                scanned += counted ?? 0
                return (page, upTo)
            }
            let files: [(id: Int64, path: String)] = page.map { ($0[0], $0[1]) }
            var outcome = [Int64: RepairOutcome]()
            if options.repair, !files.isEmpty {
                outcome = try repairEach(files.map(\.id)) { tx, id in try tx.removeUnreferencedFile(id) }
            }
            for f in files {
                let o = outcome[f.id]
                if case .vanished? = o { continue }
                add(
                    "unreferenced_file", .object(["path": .string(f.path)]),
                    "\(f.path) is registered but no edge references it" + (o?.suffix ?? ""),
                    repaired: o?.repaired ?? false)
            }
            report(phase, Int(scanned), total)
            guard let upTo else { break }
            after = upTo
        }
    }

    /// Repairs a page in one transaction; if a rule refuses (a deny edge), each item is tried
    /// in a transaction of its own, so one refusal leaves the others repaired.
    func repairEach(
        _ ids: [Int64], _ body: (WriteTransaction, Int64) throws -> RepairOutcome
    ) throws -> [Int64: RepairOutcome] {
        do {
            return try write { tx in
                var out = [Int64: RepairOutcome]()
                for id in ids { out[id] = try body(tx, id) }
                return out
            }
        } catch let e as StoreError where e.code == .deleteDenied || e.code == .danglingEdge {
            var out = [Int64: RepairOutcome]()
            for id in ids {
                do {
                    out[id] = try write { tx in try body(tx, id) }
                } catch let e as StoreError where e.code == .deleteDenied || e.code == .danglingEdge {
                    out[id] = .refused(e.message)
                }
            }
            return out
        }
    }
}

extension WriteTransaction {
    /// verify's repair of a missing file: if it is still registered, referenced and gone,
    /// every edge to it is removed as "destination deleted" (their rules fire at flush) and
    /// the registry row goes with its last edge.
    func removeMissingFile(_ id: Int64) throws -> RepairOutcome {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT path, device FROM file WHERE id = ?"), arguments: [id]),
            VerifyRun.isMissing(row[0], device: row[1], store)
        else { return .vanished }
        let edges = try EdgeRow.fetch(db, where: "e.is_file = 1 AND e.dst = ?", [id])
        guard !edges.isEmpty else { return .vanished }
        try db.cachedStatement(sql: "DELETE FROM edge WHERE is_file = 1 AND dst = ?").execute(arguments: [id])
        for row in edges {
            report.edgesRemoved.append(RemovedEdge(edge: row.edge, reason: .destinationDeleted))
            filesTouched.insert(row.dst)
            indexDirty.insert(row.src)
            removedWithReason.append((row, .destinationDeleted))
        }
        return .repaired("its file edges were removed as \"destination deleted\"")
    }

    /// verify's repair of an unreferenced registry row (see `VerifyRun.unreferencedFiles`).
    func removeUnreferencedFile(_ id: Int64) throws -> RepairOutcome {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT path, device, inode, size, birth, generation, ctime, claim FROM file f WHERE id = ?
                        AND NOT EXISTS (SELECT 1 FROM edge e WHERE e.is_file = 1 AND e.dst = f.id)
                        """), arguments: [id])
        else { return .vanished }
        let path: String = row[0]
        let device: Int64? = row[1]
        let inode: Int64? = row[2]
        try db.cachedStatement(sql: "DELETE FROM file WHERE id = ?").execute(arguments: [id])
        rowLeft(inode: inode, device: device)
        guard let device, let inode else {
            return .repaired("the registry row was dropped; the file was never seen, so nothing is unlinked")
        }
        var file = RegisteredFile(
            path: path, size: row[3], device: device, inode: inode,
            stamp: FileStamp(birth: row[4], generation: row[5], ctime: row[6]))
        // A claimed row names its file only where its claim covers it (FileClaim.swift).
        let claim = RowClaim(text: row[7])
        if claim != .none {
            file.identify(store, claim: claim)
            // A look that ended on a transient error is owed (the sweep takes it), not a "no".
            guard file.device != nil || file.owed != nil else {
                return .repaired(
                    "the registry row was dropped; its claim does not cover the file there, so nothing is unlinked")
            }
        }
        try file.queueUnlink(db, commit: commit, now: now, delay: store.configuration.unlinkDelay)
        report.filesQueued.append(path)
        return .repaired("the registry row was dropped and the file queued for unlinking")
    }
}

/// What one repair did.
enum RepairOutcome {
    /// Fixed, and how.
    case repaired(String)
    /// A rule refused it (a deny edge); why.
    case refused(String)
    /// The problem was gone by the time the write lock was held: it is not reported.
    case vanished

    /// True for `repaired`.
    var repaired: Bool {
        if case .repaired = self { return true }
        return false
    }

    /// "; how" or "; not repaired: why", appended to the problem's sentence.
    var suffix: String {
        switch self {
        case .repaired(let how): return "; " + how
        case .refused(let why): return "; not repaired: " + why
        case .vanished: return ""
        }
    }
}
