// One database per root (assetd(8), ROOTS; docs/DESIGN.md, "One database per root"): every
// writable open of the configured database binds each root to it through the root's marker
// (RootMarker.swift), before anything is unlinked there. A root another live process holds,
// or whose marker names another database, is refused; so is a root full of files that this
// database, registering none, has never seen (store.path changed without moving the
// database), unless adopted (`assetd --adopt-root`). A root without a marker under a
// database that registers files (an upgrade) gets one.

import GRDB
import Glibc
import Synchronization

/// The markers a store holds locked (closing them releases the flocks).
final class RootLocks: Sendable {
    /// The open marker per root, and its device and inode when opened.
    let held: [(root: String, fd: Int32, device: UInt64, inode: UInt64)]

    init(_ held: [(root: String, fd: Int32, device: UInt64, inode: UInt64)]) { self.held = held }

    deinit { for h in held { Glibc.close(h.fd) } }
}

extension Store {
    /// The meta key of the database's id.
    static let databaseIDKey = "database_id"

    /// The database's id, nil if it has none yet (a read-only open of a database no writer of
    /// this version opened).
    public var databaseID: String? {
        try? read { r in
            try String.fetchOne(r.db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.databaseIDKey])
        }
    }

    /// Whether a refusal of `bindRoots` (assetd exits 78 on it).
    public static func isRootRefusal(_ error: StoreError) -> Bool {
        error.code == .conflict && error.detail?["root_binding"] != nil
    }

    /// Gives the database an id if it has none, then binds every root (see the top of the file).
    func bindRoots() throws {
        let id: String
        do {
            id = try Store.mapErrors {
                try pool.write { db in
                    if let id = try String.fetchOne(
                        db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.databaseIDKey])
                    {
                        return id
                    }
                    let made = Store.newDatabaseID()
                    try db.execute(
                        sql: "INSERT INTO meta(key, value) VALUES (?, ?)", arguments: [Store.databaseIDKey, made])
                    return made
                }
            }
            // A write outside the commit count: synced here, not by makeDurable.
            try syncWAL(force: true)
        } catch let e where Store.isStorageFull(e) {
            state.withLock {
                $0.openWarnings.append(
                    "the disk holding \(path) is full: the database has no id yet, so its roots are not bound to it"
                        + " (assetd(8), ROOTS); they are at the next start")
            }
            return
        }
        let registersNothing = try read { r in
            try Bool.fetchOne(
                r.db, sql: "SELECT NOT EXISTS (SELECT 1 FROM file) AND NOT EXISTS (SELECT 1 FROM unlink_queue)")
                ?? true
        }
        var held = [(root: String, fd: Int32, device: UInt64, inode: UInt64)]()
        do {
            for root in roots.paths {
                let adopt = Store.names(configuration.adoptRoots, root)
                guard let fd = try bind(root, id: id, adopt: adopt, registersNothing: registersNothing) else {
                    continue
                }
                var st = stat()
                fstat(fd, &st)
                held.append((root, fd, UInt64(st.st_dev), UInt64(st.st_ino)))
            }
        } catch {
            for h in held { Glibc.close(h.fd) }
            throw error
        }
        rootLocks.withLock { $0 = RootLocks(held) }
    }

    /// Binds one root; the marker's descriptor to keep (its flock with it), nil when the root
    /// is missing or cannot take a marker (a warning says so).
    private func bind(_ root: String, id: String, adopt: Bool, registersNothing: Bool) throws(StoreError) -> Int32? {
        let marker = root + "/" + RootMarker.fileName
        func warn(_ why: String) {
            state.withLock {
                $0.openWarnings.append(
                    "root \(root) is not bound to this database (\(why)): another database's daemon on it would not be"
                        + " refused (assetd(8), ROOTS)")
            }
        }
        for _ in 0..<3 {
            // Read-write where it may: an exclusive lock on NFS needs a file open for writing.
            var fd = Glibc.open(marker, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            if fd < 0 && [EROFS, EACCES, EPERM].contains(errno) {
                fd = Glibc.open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            }
            if fd < 0 {
                let e = errno
                if e == ENOENT {
                    var st = stat()
                    guard stat(root, &st) == 0 else { return nil }  // a missing root: judged elsewhere
                    if registersNothing && !adopt && RootMarker.holdsEntries(root, roots: roots.paths) {
                        throw refusal(
                            root, "unbound",
                            "root \(root) holds files but no \(RootMarker.fileName), and this database (\(describe(id)))"
                                + " registers no file: was store.path changed without moving the database? Point"
                                + " store.path at the database that registered them; to manage these files with this"
                                + " database, start once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
                    }
                    switch RootMarker.create(in: root, database: id, store: self.path, replace: false) {
                    case .made(let made, let locked):
                        if !locked { warn("\(marker) cannot be locked: \(errnoDescription(errno))") }
                        return made
                    case .exists: continue  // made meanwhile: judged as any other
                    case .failed(let call, let e):
                        warn("\(call): \(errnoDescription(e))")
                        return nil
                    }
                }
                if e == ELOOP {
                    throw refusal(root, "not_a_file", "\(marker) is a symlink: remove it (assetd(8), ROOTS)")
                }
                warn("open \(marker): \(errnoDescription(e))")
                return nil
            }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
                Glibc.close(fd)
                throw refusal(root, "not_a_file", "\(marker) is not a regular file: remove it (assetd(8), ROOTS)")
            }
            // Held first, before the ids are compared: another live daemon with this very
            // database (a copy of it) is refused too.
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let e = errno
                if e == EWOULDBLOCK {
                    let why = Store.heldMessage(root, fd)
                    Glibc.close(fd)
                    throw refusal(root, "held", why)
                }
                // NFS without a lock manager (ENOLCK), a file open read-only on NFS (EBADF).
                warn("\(marker) cannot be locked: \(errnoDescription(e))")
            }
            let content = RootMarker.read(fd)
            if content?.database == id { return fd }
            guard adopt else {
                Glibc.close(fd)
                let named = Store.named(content)
                throw refusal(
                    root, "other_database",
                    "root \(root) is bound to another database: its \(RootMarker.fileName) names \(named), this is"
                        + " \(describe(id)). If store.path changed, move that database (with its -wal) here or point"
                        + " store.path back at it; to bind the root to this database deliberately, once the other is"
                        + " stopped for good, start once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
            }
            switch RootMarker.create(in: root, database: id, store: self.path, replace: true) {
            case .made(let made, _):
                Glibc.close(fd)
                return made
            case .exists:
                Glibc.close(fd)
                continue
            case .failed(let call, let e):
                Glibc.close(fd)
                throw refusal(root, "adopt_failed", "cannot adopt root \(root): \(call): \(errnoDescription(e))")
            }
        }
        warn("\(marker) kept changing while being read")
        return nil
    }

    /// The refusal of a root whose marker, open as `fd`, another process holds locked.
    static func heldMessage(_ root: String, _ fd: Int32) -> String {
        let pid = RootMarker.holder(of: fd)
        let other = RootMarker.read(fd)?.store.map { " with the database \($0)" } ?? ""
        return "root \(root) is served by another assetd\(pid.map { " (pid \($0))" } ?? "")\(other): two daemons on"
            + " one root delete each other's files as orphans; give each its own roots (files.roots; assetd(8), ROOTS)"
    }

    /// What a marker names, for messages.
    static func named(_ content: RootMarker.Content?) -> String {
        guard let content else { return "no database it can read" }
        return "database \(content.database)" + (content.store.map { " (store.path \($0) when bound)" } ?? "")
    }

    /// True when one of `paths` is `root` once normalised.
    static func names(_ paths: [String], _ root: String) -> Bool {
        paths.contains { (try? ManagedRoots.normalise($0))?.utf8.elementsEqual(root.utf8) == true }
    }

    /// This database for messages: its id and path.
    private func describe(_ id: String) -> String { "database \(id) at \(path)" }

    private func refusal(_ root: String, _ why: String, _ message: String) -> StoreError {
        StoreError(.conflict, message, detail: ["root_binding": .string(why), "root": .string(root)])
    }

    /// A random id: 128 bits as hex.
    static func newDatabaseID() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = String(UInt32.random(in: .min ... .max, using: &g), radix: 16)
            return String(repeating: "0", count: 8 - word.count) + word
        }.joined()
    }

    /// Why orphans must not be deleted under a root this store bound: its marker is no longer
    /// the file it holds locked (removed or replaced since, so another daemon may hold the new
    /// one), or nil.
    func markerReplaced() -> String? {
        guard let locks = rootLocks.withLock({ $0 }) else { return nil }
        for h in locks.held {
            var st = stat()
            let path = h.root + "/" + RootMarker.fileName
            if lstat(path, &st) != 0 || UInt64(st.st_dev) != h.device || UInt64(st.st_ino) != h.inode {
                return "refusing to delete orphans under \(h.root): its \(RootMarker.fileName) was removed or replaced"
                    + " since assetd started, so another daemon may have bound the root; restart assetd to bind it"
                    + " again (assetd(8), ROOTS)"
            }
        }
        return nil
    }
}

extension Store {
    /// What a start would refuse about the roots' markers, judged without opening the store
    /// to write nor locking anything (`assetd --check-config`): a marker naming another
    /// database than the one at `database`, or files in an unmarked root that database
    /// (missing, or registering none) never saw. A database that cannot be read is not judged.
    public static func rootBindingProblems(database: String, roots: [String], adopt: [String]) -> [String] {
        var id: String?
        var registersNothing = true
        if access(database, F_OK) == 0 {
            var c = Configuration()
            c.readonly = true
            guard let queue = try? DatabaseQueue(path: database, configuration: c),
                let (found, empty) = try? queue.read({ db -> (String?, Bool) in
                    let id = try String.fetchOne(
                        db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Store.databaseIDKey])
                    let empty =
                        try Bool.fetchOne(
                            db,
                            sql: "SELECT NOT EXISTS (SELECT 1 FROM file) AND NOT EXISTS (SELECT 1 FROM unlink_queue)")
                        ?? true
                    return (id, empty)
                })
            else { return [] }
            try? queue.close()
            id = found
            registersNothing = empty
        }
        guard let normal = try? ManagedRoots(roots) else { return [] }
        var out = [String]()
        for root in normal.paths.reversed() {
            if names(adopt, root) { continue }
            let marker = root + "/" + RootMarker.fileName
            let fd = Glibc.open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            if fd >= 0 {
                let content = RootMarker.read(fd)
                // Held by a live process: this very database's daemon (a check before a reload)
                // or another one, which start refuses before comparing ids.
                let held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK
                defer { Glibc.close(fd) }
                if let content, content.database == id { continue }
                if held {
                    out.append(heldMessage(root, fd))
                    continue
                }
                let named = Store.named(content)
                out.append(
                    "root \(root) is bound to another database: its \(RootMarker.fileName) names \(named), not the one"
                        + " at \(database)\(id == nil ? " (missing, or never opened by this version)" : ""). If"
                        + " store.path changed, move that database (with its -wal) here or point store.path back at it;"
                        + " to bind the root to this database deliberately, once the other is stopped for good, start"
                        + " once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
            } else if errno == ENOENT, registersNothing, RootMarker.holdsEntries(root, roots: normal.paths) {
                out.append(
                    "root \(root) holds files but no \(RootMarker.fileName), and the database at \(database)"
                        + " registers no file (or does not exist yet): was store.path changed without moving the"
                        + " database? Point store.path at the database that registered them; to manage these files"
                        + " with this database, start once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
            }
        }
        return out
    }
}
