// The marker that binds a managed root to one database (assetd(8), ROOTS; docs/DESIGN.md,
// "One database per root"): `.assetd-root` at the root's top names the database's id, and the
// process that writes through that database holds an flock on it. Another database's
// orphan pass would take every file of the root for its own orphans: that is the only harm,
// so a marker only the daemon's user (or root) could have made and can lock may refuse a
// start; anything else at the name only bars orphan deletion under that root. The file is
// made unnamed (O_TMPFILE), written, locked, then linked into place, so no one ever reads it
// half written or finds it unlocked while its maker runs; mode 0600, so no client can lock it.

import Glibc

/// Reading, writing and locking a root's marker.
public enum RootMarker {
    /// The file's name in the root.
    public static let fileName = ".assetd-root"
    /// The name as a path ends with it.
    static let nameBelow = "/" + fileName
    /// The first line: what the file is.
    static let header = "# assetd root marker: this folder is a managed root of the database named below."

    /// What a marker says.
    struct Content: Equatable {
        /// The database's id (meta key `database_id`).
        var database: String
        /// Its store.path when the marker was written (for messages only).
        var store: String?
    }

    /// The file's text for `database` at `store`.
    static func render(database: String, store: String) -> String {
        """
        \(header)
        # Another database's daemon refuses this root; assetd(8), ROOTS, says how to adopt it.
        database \(database)
        store \(store)

        """
    }

    /// The database and store lines of `text`; nil without a database line.
    static func parse(_ text: String) -> Content? {
        var content = Content(database: "")
        for line in text.split(separator: "\n") {
            if line.hasPrefix("database ") { content.database = String(line.dropFirst(9)) }
            if line.hasPrefix("store ") { content.store = String(line.dropFirst(6)) }
        }
        return content.database.isEmpty ? nil : content
    }

    /// True for the marker at `root`'s top (its exact name only): never an orphan, never
    /// registered.
    static func isMarker<S: Collection<UInt8>>(_ path: S, roots: [String]) -> Bool {
        roots.contains { root in (root + "/" + fileName).utf8.elementsEqual(path) }
    }

    /// Why the file `st` describes is no marker to trust, or nil: a regular file of the
    /// daemon's user or root, one link, writable by no group or other. Anything else a client
    /// may have made or linked there.
    static func distrust(_ st: stat) -> String? {
        let kind = st.st_mode & S_IFMT
        if kind != S_IFREG {
            let names = [S_IFLNK: "a symlink", S_IFDIR: "a directory", S_IFIFO: "a FIFO"]
            return names[kind] ?? "not a regular file"
        }
        if st.st_uid != geteuid() && st.st_uid != 0 { return "owned by uid \(st.st_uid), not by assetd's user" }
        if st.st_nlink != 1 { return "a file with \(st.st_nlink) links" }
        if st.st_mode & 0o022 != 0 { return "writable by its group or others" }
        return nil
    }

    /// Why the entries at the top of `root` could have been put there by another user (its
    /// owner is neither root nor assetd's user, or its group or others may write it without
    /// the sticky bit: a client could move another root's or a copied marker into place), or
    /// nil. Only a marker such a folder guards may keep the daemon from starting.
    static func unguardedTop(_ root: String) -> String? {
        var st = stat()
        guard stat(root, &st) == 0 else { return "it cannot be looked at" }
        if st.st_uid != geteuid() && st.st_uid != 0 { return "its folder is owned by uid \(st.st_uid)" }
        if st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0 {
            return "its folder is writable by its group or others without the sticky bit (chmod +t)"
        }
        return nil
    }

    /// Reads at most 4 KiB of the open marker.
    static func read(_ fd: Int32) -> Content? {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return parse(String(decoding: bytes[..<n], as: UTF8.self))
    }

    /// Makes the marker of `root` naming `database` unnamed (O_TMPFILE), locks it and puts it
    /// in place: linked (never replacing one another process made meanwhile: `.exists`), or,
    /// with `replace`, linked under a random name and renamed over what is there (a symlink
    /// is replaced, not followed; a directory is not: EISDIR). A filesystem without O_TMPFILE
    /// gets the file made under a random name first. The locked descriptor, or the errno and
    /// call that failed.
    static func create(
        in root: String, database: String, store: String, replace: Bool
    ) -> CreateOutcome {
        let path = root + "/" + fileName
        var fd = openTemporaryFile(in: root, mode: 0o600)
        var named: String?  // the random name the file has, when made or linked under one
        if fd < 0 && [EOPNOTSUPP, EISDIR, EINVAL].contains(errno) {
            let temporary = path + "." + randomToken() + ".new"
            fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { named = temporary }
        }
        guard fd >= 0 else { return .failed("open \(root) with O_TMPFILE", errno) }
        func fail(_ call: String, _ e: Int32) -> CreateOutcome {
            if let named { unlinkIfSame(named, fd) }
            close(fd)
            return .failed(call, e)
        }
        let bytes = Array(render(database: database, store: store).utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count || fsync(fd) != 0 {
            return fail("write the marker of \(root)", n < 0 || n == bytes.count ? errno : EIO)
        }
        fchmod(fd, 0o600)  // only assetd's user may open it, so only it may lock it
        // Fresh: nobody else can hold it. A file system without locks still gets the marker.
        let locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        if replace && named == nil {
            let temporary = path + "." + randomToken() + ".new"
            guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 else {
                return fail("link \(temporary)", errno)
            }
            named = temporary
        }
        let placed: Int32
        if let named {
            placed = replace ? rename(named, path) : link(named, path)
        } else {
            placed = linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, path, AT_SYMLINK_FOLLOW)
        }
        let e = errno
        if placed != 0 {
            let failed = fail(replace ? "rename over \(path)" : "link \(path)", e)
            return e == EEXIST && !replace ? .exists : failed
        }
        if let named, !replace { unlinkIfSame(named, fd) }
        try? Store.sync(root)  // the marker's name durable: a crash must not lose the binding
        return .made(fd, locked: locked)
    }

    /// Unlinks `path` only while it is still the file open as `fd`: a client may have put
    /// its own file there meanwhile.
    private static func unlinkIfSame(_ path: String, _ fd: Int32) {
        let dir = StoreFileOwner.openFolder(of: path)
        guard dir >= 0 else { return }
        defer { close(dir) }
        StoreFileOwner.removeIfNamed(fd, StoreFileOwner.split(path).name, in: dir)
    }

    /// 64 random bits as hex: a name no one can foresee.
    private static func randomToken() -> String {
        String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// What `create` did.
    enum CreateOutcome {
        case made(Int32, locked: Bool)
        case exists
        case failed(String, Int32)
    }

    /// The pids holding an flock on the file open as `fd`, read from /proc/locks (a lock
    /// taken on another machine through NFS is not listed there); empty when none is seen.
    static func holders(of fd: Int32) -> [Int32] {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return [] }
        return StoreLock.flockHolders(st)
    }

    /// The effective uid `pid` runs as (/proc/PID/status), nil when it cannot be told (gone,
    /// or in another pid namespace).
    static func uid(of pid: Int32) -> uid_t? {
        guard pid > 0, let file = fopen("/proc/\(pid)/status", "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix("Uid:") else { continue }
            let ids = text.split(whereSeparator: { $0 == "\t" || $0 == " " || $0 == "\n" })
            return ids.count >= 3 ? uid_t(ids[2]) : nil
        }
        return nil
    }

    /// Of `pids`, those running as assetd's user or root: another assetd (or an admin's tool)
    /// that a start must not run beside. Any other holder is a client, which must not keep
    /// the daemon down.
    static func trustedHolders(_ pids: [Int32]) -> [Int32] {
        pids.filter { pid in uid(of: pid).map { $0 == geteuid() || $0 == 0 } ?? false }
    }

    /// True when `root`'s top holds anything but the folder's own tag, a file system's
    /// lost+found, the marker and the way to a root nested in it (`roots`): files another
    /// database may have registered.
    static func holdsEntries(_ root: String, roots: [String]) -> Bool {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0, let dir = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            return false
        }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if [".", "..", CacheDirectoryTag.fileName, "lost+found", fileName].contains(name) { continue }
            let below = Array((root + "/" + name).utf8)
            if roots.contains(where: { r in
                let r = Array(r.utf8)
                return r == below || r.starts(with: below + [UInt8(ascii: "/")])
            }) {
                continue
            }
            return true
        }
        return false
    }
}
