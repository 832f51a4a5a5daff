// One database per root (assetd(8), ROOTS; docs/DESIGN.md, "One database per root"): every
// writable open of the configured database binds each root to it through the root's marker
// (RootMarker.swift), before anything is unlinked there. A trusted marker another live assetd
// of this user (or root) holds, or one naming another database, is refused (exit 78). What a
// client could have made or can lock never refuses a start: a root whose marker is missing
// (under files this database never saw), untrusted, or locked by another user's process
// starts unbound, and `verify --delete-orphans` is refused there until `assetd --adopt-root`.
// A root without a marker under a database that registers files (an upgrade) gets one.

import GRDB
import Glibc
import Synchronization

/// The markers a store holds locked (closing them releases the flocks), and why each root
/// not held locked may have no orphan deleted.
final class RootLocks: Sendable {
    /// The open marker per root, and its device and inode when opened.
    let held: [(root: String, fd: Int32, device: UInt64, inode: UInt64)]
    /// Per root not bound, or bound without a lock: why.
    let unbound: [String: String]

    init(_ held: [(root: String, fd: Int32, device: UInt64, inode: UInt64)], unbound: [String: String]) {
        self.held = held
        self.unbound = unbound
    }

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
                        + " and orphans are not deleted (assetd(8), ROOTS); they are bound at the next start")
            }
            let why = "the database had no id at start (full disk)"
            let unbound = Dictionary(uniqueKeysWithValues: roots.paths.map { ($0, why) })
            rootLocks.withLock { $0 = RootLocks([], unbound: unbound) }
            return
        }
        let registersNothing = try read { r in
            try Bool.fetchOne(
                r.db, sql: "SELECT NOT EXISTS (SELECT 1 FROM file) AND NOT EXISTS (SELECT 1 FROM unlink_queue)")
                ?? true
        }
        var held = [(root: String, fd: Int32, device: UInt64, inode: UInt64)]()
        var unbound = [String: String]()
        do {
            for root in roots.paths {
                let adopt = Store.names(configuration.adoptRoots, root)
                switch try bind(root, id: id, adopt: adopt, registersNothing: registersNothing) {
                case .bound(let fd, let locked):
                    var st = stat()
                    fstat(fd, &st)
                    held.append((root, fd, UInt64(st.st_dev), UInt64(st.st_ino)))
                    if !locked { unbound[root] = "its \(RootMarker.fileName) could not be locked" }
                case .unbound(let why):
                    unbound[root] = why
                    state.withLock {
                        $0.openWarnings.append(
                            "ROOT NOT BOUND: \(root): \(why). Orphans are not deleted there (verify --delete-orphans"
                                + " refuses) until it is bound: check the root, then start once with"
                                + " `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
                    }
                case .missing:
                    unbound[root] = "it was missing at start"
                }
            }
        } catch {
            for h in held { Glibc.close(h.fd) }
            throw error
        }
        rootLocks.withLock { $0 = RootLocks(held, unbound: unbound) }
    }

    /// What binding one root gave.
    private enum Binding {
        /// Its marker open (locked, where the filesystem could), kept for as long as the store.
        case bound(Int32, locked: Bool)
        /// Not bound: why (a warning says so; orphan deletion is refused there).
        case unbound(String)
        /// No root there (judged elsewhere).
        case missing
    }

    /// Binds one root (see the top of the file).
    private func bind(_ root: String, id: String, adopt: Bool, registersNothing: Bool) throws(StoreError) -> Binding {
        let marker = root + "/" + RootMarker.fileName
        // Made afresh over whatever is there (--adopt-root); a directory is left to the admin.
        func adoptBy(replacing what: String) throws(StoreError) -> Binding? {
            switch RootMarker.create(in: root, database: id, store: self.path, replace: true) {
            case .made(let made, let locked): return .bound(made, locked: locked)
            case .exists: return nil
            case .failed(let call, let e):
                throw refusal(
                    root, "adopt_failed",
                    "cannot adopt root \(root): its \(RootMarker.fileName) is \(what) and \(call) failed:"
                        + " \(errnoDescription(e))\(e == EISDIR || e == ENOTEMPTY || e == EEXIST ? "; remove that directory, then start again" : "")"
                        + " (assetd(8), ROOTS)")
            }
        }
        for _ in 0..<3 {
            // Looked at before it is opened: a FIFO or a device is never opened.
            var seen = stat()
            if lstat(marker, &seen) != 0 {
                let e = errno
                guard e == ENOENT else { return .unbound("\(marker) cannot be looked at: \(errnoDescription(e))") }
                var st = stat()
                guard stat(root, &st) == 0 else { return .missing }
                if registersNothing && !adopt && RootMarker.holdsEntries(root, roots: roots.paths) {
                    return .unbound(
                        "it holds files but no \(RootMarker.fileName), and this database (\(describe(id))) registers"
                            + " none: if store.path changed without moving the database, point it back at the one that"
                            + " registered them")
                }
                switch RootMarker.create(in: root, database: id, store: self.path, replace: false) {
                case .made(let made, let locked): return .bound(made, locked: locked)
                case .exists: continue  // made meanwhile: judged as any other
                case .failed(let call, let e): return .unbound("\(call): \(errnoDescription(e))")
                }
            }
            if let why = RootMarker.distrust(seen) {
                if adopt, let b = try adoptBy(replacing: why) { return b }
                if adopt { continue }
                return .unbound("its \(RootMarker.fileName) is \(why): a client may have put it there")
            }
            // Read-write where it may: an exclusive lock on NFS needs a file open for writing.
            var fd = Glibc.open(marker, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            if fd < 0 && [EROFS, EACCES, EPERM].contains(errno) {
                fd = Glibc.open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            }
            guard fd >= 0 else {
                if [ENOENT, ELOOP, ENXIO, EISDIR].contains(errno) { continue }  // changed since the look
                return .unbound("open \(marker): \(errnoDescription(errno))")
            }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_dev == seen.st_dev, st.st_ino == seen.st_ino else {
                Glibc.close(fd)
                continue  // replaced since the look
            }
            // Held first, before the ids are compared: another live daemon with this very
            // database (a copy of it) is refused too.
            var locked = true
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let e = errno
                if e == EWOULDBLOCK {
                    let pids = RootMarker.holders(of: fd)
                    let trusted = RootMarker.trustedHolders(pids)
                    if !trusted.isEmpty {
                        let why = Store.heldMessage(root, fd, pids: trusted)
                        Glibc.close(fd)
                        // A marker another user could have moved here never stops the start.
                        if let open = RootMarker.unguardedTop(root) { return .unbound("\(why); and \(open)") }
                        throw refusal(root, "held", why)
                    }
                    Glibc.close(fd)
                    let who = pids.map { "pid \($0) (uid \(RootMarker.uid(of: $0).map { String($0) } ?? "?"))" }
                    if adopt, let b = try adoptBy(replacing: "locked by another user's process") { return b }
                    if adopt { continue }
                    return .unbound(
                        "its \(RootMarker.fileName) is locked by \(who.isEmpty ? "a process not seen in /proc/locks" : who.joined(separator: ", ")),"
                            + " not by an assetd of this user")
                }
                // NFS without a lock manager (ENOLCK), a file open read-only on NFS (EBADF).
                locked = false
                state.withLock {
                    $0.openWarnings.append(
                        "\(marker) cannot be locked (\(errnoDescription(e))): another daemon on root \(root) would"
                            + " not be refused, so orphans are not deleted there (assetd(8), ROOTS)")
                }
            }
            let content = RootMarker.read(fd)
            if content?.database == id {
                if st.st_mode & 0o077 != 0 { fchmod(fd, 0o600) }  // made 0644 by an earlier version
                return .bound(fd, locked: locked)
            }
            guard adopt else {
                Glibc.close(fd)
                let named = Store.named(content)
                // Unreadable, or in a top folder another user may change: a client could have
                // put it there (moved another file over the name), so it only unbinds the root.
                if let open = RootMarker.unguardedTop(root) ?? (content == nil ? "cannot be read as a marker" : nil) {
                    return .unbound(
                        "its \(RootMarker.fileName) names \(named), not this database (\(describe(id))), and \(open):"
                            + " a client may have put it there; `assetd --adopt-root \(root)` binds it deliberately")
                }
                throw refusal(
                    root, "other_database",
                    "root \(root) is bound to another database: its \(RootMarker.fileName) names \(named), this is"
                        + " \(describe(id)). If store.path changed, move that database (with its -wal) here or point"
                        + " store.path back at it; to bind the root to this database deliberately, once the other is"
                        + " stopped for good, start once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
            }
            Glibc.close(fd)
            if let b = try adoptBy(replacing: "another database's") { return b }
        }
        return .unbound("\(marker) kept changing while being read")
    }

    /// The refusal of a root whose marker, open as `fd`, another process holds locked.
    static func heldMessage(_ root: String, _ fd: Int32, pids: [Int32]) -> String {
        let pid = pids.first
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

    /// Why orphans must not be deleted under some root, or nil: a store that binds roots
    /// deletes orphans only under a root whose marker it holds locked and that is still the
    /// file it locked (not removed or replaced since, so that another daemon may hold the
    /// new one).
    func orphanDeletionBar() -> String? {
        guard configuration.bindRoots && !configuration.readOnly else { return nil }
        let locks = rootLocks.withLock { $0 }
        for root in roots.paths {
            if let why = locks?.unbound[root] ?? (locks == nil ? "it was not bound at start" : nil) {
                return "refusing to delete orphans under \(root): it is not bound to this database (\(why)), so its"
                    + " files may be another database's; check it, then start once with `assetd --adopt-root \(root)`"
                    + " (assetd(8), ROOTS)"
            }
            guard let h = locks?.held.first(where: { $0.root == root }) else {
                return "refusing to delete orphans under \(root): it was not bound at start (added since, or missing"
                    + " then); restart assetd to bind it (assetd(8), ROOTS)"
            }
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
    /// What a start would refuse about the roots' markers (`refusals`: exit 78) and what it
    /// would start unbound (`warnings`), judged without opening the store to write nor
    /// locking anything (`assetd --check-config`; the lock's holders are read from
    /// /proc/locks): a trusted marker naming another database than the one at `database`, or
    /// held by another process of assetd's user. A database that cannot be read is not judged.
    public static func rootBindingProblems(
        database: String, roots: [String], adopt: [String]
    ) -> (refusals: [String], warnings: [String]) {
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
            else { return ([], []) }
            try? queue.close()
            id = found
            registersNothing = empty
        }
        guard let normal = try? ManagedRoots(roots) else { return ([], []) }
        var refusals = [String]()
        var warnings = [String]()
        func unbound(_ root: String, _ why: String) {
            warnings.append(
                "root \(root) would start unbound (\(why)): orphans are not deleted there until"
                    + " `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
        }
        for root in normal.paths.reversed() {
            if names(adopt, root) { continue }
            let marker = root + "/" + RootMarker.fileName
            var seen = stat()
            guard lstat(marker, &seen) == 0 else {
                if errno == ENOENT, registersNothing, RootMarker.holdsEntries(root, roots: normal.paths) {
                    unbound(
                        root,
                        "it holds files but no \(RootMarker.fileName), and the database at \(database) registers no"
                            + " file (or does not exist yet)")
                }
                continue
            }
            if let why = RootMarker.distrust(seen) {
                unbound(root, "its \(RootMarker.fileName) is \(why)")
                continue
            }
            let fd = Glibc.open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_dev == seen.st_dev, st.st_ino == seen.st_ino else {
                unbound(root, "its \(RootMarker.fileName) changed while being looked at")
                continue
            }
            let content = RootMarker.read(fd)
            let pids = RootMarker.holders(of: fd)
            let trusted = RootMarker.trustedHolders(pids)
            // Held by this very database's daemon (a check before a reload): fine.
            if let content, content.database == id { continue }
            // As at start: a marker another user could have moved here, or one that does not
            // read as a marker, only unbinds the root.
            let open = RootMarker.unguardedTop(root) ?? (content == nil ? "it cannot be read as a marker" : nil)
            if !trusted.isEmpty {
                let held = heldMessage(root, fd, pids: trusted)
                if let open { unbound(root, held + "; and " + open) } else { refusals.append(held) }
                continue
            }
            if !pids.isEmpty {
                unbound(root, "its \(RootMarker.fileName) is locked by pid \(pids[0]), not an assetd of this user")
                continue
            }
            let named = Store.named(content)
            if let open {
                unbound(root, "its \(RootMarker.fileName) names \(named), not this database, and \(open)")
                continue
            }
            refusals.append(
                "root \(root) is bound to another database: its \(RootMarker.fileName) names \(named), not the one"
                    + " at \(database)\(id == nil ? " (missing, or never opened by this version)" : ""). If"
                    + " store.path changed, move that database (with its -wal) here or point store.path back at it;"
                    + " to bind the root to this database deliberately, once the other is stopped for good, start"
                    + " once with `assetd --adopt-root \(root)` (assetd(8), ROOTS)")
        }
        return (refusals, warnings)
    }
}
