// A queued file is recorded with its st_dev, which is not stable: a reboot can number a
// filesystem anew (disks found in another order, LVM minors, btrfs subvolumes' anonymous
// devices). Then every file queued before it would read as on another filesystem, or, when
// already gone, as hidden on an unmounted one: retried for a day, then parked until the next
// start, and never removed (leaked). So the store notes,
// for each root's filesystem, the device numbers it has had under its filesystem id
// (statvfs f_fsid, from the filesystem's UUID on ext4 and btrfs), and the sweep reads a
// recorded device the root's filesystem had before as the device it has now.
// Two disks found in the other order swap their numbers: each number was then both
// filesystems', and by device alone no file recorded on it could be told. So the numbers are
// noted under each root too, and a file's recorded number is read by the root its path lies
// under: that root's filesystem had it, and no other filesystem did there.

import GRDB
import Glibc

/// The earlier device numbers of the roots' filesystems, each to the number it has now.
struct RenumberedDevices: Sendable {
    /// Numbers only one filesystem ever had as a root's (root_device), whatever root a file
    /// is under.
    var anyRoot: [Int64: Int64] = [:]
    /// By root: numbers that root's filesystem had and no other there (root_filesystem).
    var byRoot: [String: [Int64: Int64]] = [:]
    /// Earlier numbers left out because two filesystems had them under one root, and why.
    var ambiguous: [(root: String, device: Int64, why: String)] = []

    /// Nothing was renumbered (the usual case): no row's number needs reading by its root.
    var isEmpty: Bool { anyRoot.isEmpty && byRoot.isEmpty }

    /// The number `device`'s filesystem has now, for a file under `root`, if it was renumbered.
    func now(_ device: Int64, root: String?) -> Int64? {
        if let root, let now = byRoot[root]?[device] { return now }
        return anyRoot[device]
    }
}

extension Store {
    /// The device and filesystem id of each root that exists now (roots whose filesystem
    /// gives no id, 0, are left out: nothing could tell its devices apart). Read through the
    /// root's pin (ManagedRoots+Pins.swift), not its path: a nested root lies in folders
    /// clients write, and a folder or symlink put in its place would note another filesystem
    /// under it (its numbers then ambiguous there for ever), and a FUSE mount there would
    /// hold the caller's write transaction on the client's server. A root not its pinned
    /// folder, or on FUSE (which gives no id anyway), is left out.
    func rootFilesystems() -> [(root: String, device: Int64, fsid: Int64)] {
        if let played = state.withLock({ $0.rootFilesystems }) {
            return zip(roots.paths, played()).map { ($0, $1.device, $1.fsid) }
        }
        return roots.paths.compactMap { root in
            guard case .folder(let fd) = roots.pins.open(root, flags: SafeUnlinker.oPath) else { return nil }
            defer { Glibc.close(fd) }
            guard roots.pins.pin(of: root)?.onFUSE == false else { return nil }
            var st = stat()
            var fs = statvfs()
            guard fstat(fd, &st) == 0, fstatvfs(fd, &fs) == 0 else { return nil }
            let id = Int64(bitPattern: UInt64(fs.f_fsid))
            return id == 0 ? nil : (root, Int64(bitPattern: UInt64(st.st_dev)), id)
        }
    }

    /// `device` as its filesystem is numbered now, if it is a renumbered one of the root
    /// `path` lies under. A file recorded on `device` may be on either: the number may be
    /// another filesystem's now (one mounted below a root), and the recorded number still
    /// tells it.
    func deviceNow(_ device: Int64, path: String) -> Int64 {
        let root = roots.nearestRoot(of: path)
        return state.withLock { $0.renumbered.now(device, root: root) } ?? device
    }

    /// Records the roots' devices under their filesystem ids (and their roots) and reads which
    /// earlier ones they replace, in the caller's write transaction (at open, before each sweep
    /// and min_free run); the result is kept for `deviceNow` too.
    func noteRootDevices(_ db: Database, now: Double) throws -> RenumberedDevices {
        let filesystems = rootFilesystems()
        for f in filesystems {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO root_device (device, fsid, seen) VALUES (?, ?, ?)")
                .execute(arguments: [f.device, f.fsid, now])
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO root_filesystem (root, device, fsid, seen) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [f.root, f.device, f.fsid, now])
        }
        let map = try Store.renumberedDevices(db, filesystems)
        state.withLock { $0.renumbered = map }
        return map
    }

    /// The ambiguous numbers some queued or registered file under its root still carries:
    /// the table keeps the number for good, and a warning at every start about no file
    /// would have nothing to clear it. Read at open only; a scan of the root's rows, rare.
    static func carried(_ db: Database, _ ambiguous: [(root: String, device: Int64, why: String)]) throws -> [String] {
        try ambiguous.filter { a in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM unlink_queue WHERE device = ?1 AND path > ?2 || '/' AND path < ?2 || '0')
                        OR EXISTS (SELECT 1 FROM file WHERE device = ?1 AND path > ?2 || '/' AND path < ?2 || '0')
                    """, arguments: [a.device, a.root]) ?? false
        }.map(\.why)
    }

    /// Reads which earlier devices the roots' filesystems replace without recording anything,
    /// for `deviceNow` in a read-only open (verify of a store another process holds); a
    /// database from before the tables knows none.
    func readRootDevices() throws {
        let map = try read { r in
            try r.db.tableExists("root_device")
                ? Store.renumberedDevices(r.db, rootFilesystems(), byRoot: r.db.tableExists("root_filesystem"))
                : RenumberedDevices()
        }
        state.withLock { $0.renumbered = map }
    }

    /// Reads the roots' devices anew before a `min_free` run, as a sweep does: recorded in a
    /// write of its own when `recording` (a real run of a live store, not on a full disk), else
    /// only read.
    func refreshRootDevices(recording: Bool) throws {
        if recording && !isReadOnly && !isCopy {
            do {
                _ = try Store.mapErrors { try pool.write { db in try noteRootDevices(db, now: configuration.clock()) } }
                return
            } catch let e where Store.isStorageFull(e) {}
        }
        try readRootDevices()
    }

    /// Earlier devices of the roots' filesystems, each to the device the filesystem has now.
    /// By device alone (`anyRoot`), a device seen under more than one filesystem id is left
    /// out: which one a file recorded on it was on cannot be told. So is a device some root's
    /// filesystem has now. By root (`byRoot`), a device that root's filesystem had is read as
    /// the one it has now, unless another filesystem had it there too (`ambiguous`). Either
    /// way, every device of an id two roots' filesystems have now on different devices is left
    /// out: an id is not always one filesystem's (an overlay reports its upper layer's, before
    /// Linux 6.6; a cloned disk or LVM snapshot has its origin's UUID), and files on both
    /// would each be read as on the other.
    static func renumberedDevices(
        _ db: Database, _ filesystems: [(root: String, device: Int64, fsid: Int64)], byRoot: Bool = true
    ) throws -> RenumberedDevices {
        var map = RenumberedDevices()
        let current = Set(filesystems.map(\.device))
        var devices = [Int64: Set<Int64>]()
        for f in filesystems { devices[f.fsid, default: []].insert(f.device) }
        for f in filesystems where devices[f.fsid]?.count == 1 {
            let earlier = try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT device FROM root_device WHERE fsid = ?1 AND device != ?2
                        AND NOT EXISTS (SELECT 1 FROM root_device o WHERE o.device = root_device.device AND o.fsid != ?1)
                        """), arguments: [f.fsid, f.device])
            for d in earlier where !current.contains(d) { map.anyRoot[d] = f.device }
            guard byRoot else { continue }
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT device, COUNT(*) FROM root_filesystem WHERE root = ?1 AND device != ?3
                        AND device IN (SELECT device FROM root_filesystem WHERE root = ?1 AND fsid = ?2)
                        GROUP BY device ORDER BY device
                        """), arguments: [f.root, f.fsid, f.device])
            for row in rows {
                let (device, ids): (Int64, Int64) = (row[0], row[1])
                if ids == 1 {
                    map.byRoot[f.root, default: [:]][device] = f.device
                } else {
                    map.ambiguous.append(
                        (
                            f.root, device,
                            "root \(f.root): device \(device) was its filesystem's (id \(f.fsid)) and another's there:"
                                + " files recorded on it are not read as on device \(f.device) (kept, retried as on"
                                + " an unmounted filesystem)"
                        ))
                }
            }
        }
        return map
    }
}
