// The marker that binds a managed root to one database (assetd(8), ROOTS; docs/DESIGN.md,
// "One database per root"): `.assetd-root` at the root's top names the database's id, and the
// process that writes through that database holds an flock on it. Another database's
// orphan pass would take every file of the root for its own orphans: a root served by another
// live assetd, or bound to another database, is refused before anything is unlinked there.
// The file is made under a temporary name, written, locked, then linked into place, so no
// one ever reads it half written or finds it unlocked while its maker runs.

import Glibc

/// Reading, writing and locking a root's marker.
public enum RootMarker {
    /// The file's name in the root.
    public static let fileName = ".assetd-root"
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

    /// True for the marker and the temporary names it is made under, at `root`'s top: never
    /// an orphan.
    static func isMarker(_ path: [UInt8], roots: [String]) -> Bool {
        roots.contains { root in
            let prefix = Array((root + "/" + fileName).utf8)
            guard path.starts(with: prefix) else { return false }
            let rest = path[prefix.count...]
            return rest.isEmpty || (rest.first == UInt8(ascii: ".") && !rest.contains(UInt8(ascii: "/")))
        }
    }

    /// Reads at most 4 KiB of the open marker.
    static func read(_ fd: Int32) -> Content? {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return parse(String(decoding: bytes[..<n], as: UTF8.self))
    }

    /// Makes the marker of `root` naming `database` under a temporary name, locks it and puts it
    /// in place: linked (never replacing one another process made meanwhile: `.exists`), or,
    /// with `replace`, renamed over the one there. The locked descriptor, or the errno and call
    /// that failed.
    static func create(
        in root: String, database: String, store: String, replace: Bool
    ) -> CreateOutcome {
        let path = root + "/" + fileName
        let temporary = path + ".\(getpid()).new"
        unlink(temporary)  // left by a crash of this pid's earlier namesake
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return .failed("open \(temporary)", errno) }
        let bytes = Array(render(database: database, store: store).utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count || fsync(fd) != 0 {
            let e = n < 0 || n == bytes.count ? errno : EIO
            close(fd)
            unlink(temporary)
            return .failed("write \(temporary)", e)
        }
        fchmod(fd, 0o644)  // readable by admins whatever the umask: it only names the database
        // Fresh: nobody else can hold it. A file system without locks still gets the marker.
        let locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        let placed = replace ? rename(temporary, path) : link(temporary, path)
        let e = errno
        if !replace { unlink(temporary) }
        guard placed == 0 else {
            if replace { unlink(temporary) }
            close(fd)
            return e == EEXIST ? .exists : .failed(replace ? "rename \(temporary)" : "link \(temporary)", e)
        }
        let dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)  // the marker's name durable: a crash must not lose the binding
            close(dir)
        }
        return .made(fd, locked: locked)
    }

    /// What `create` did.
    enum CreateOutcome {
        case made(Int32, locked: Bool)
        case exists
        case failed(String, Int32)
    }

    /// The pid holding an flock on the file open as `fd`, read from /proc/locks (a lock taken
    /// on another machine through NFS is not listed there); nil when it cannot be told.
    static func holder(of fd: Int32) -> Int32? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let dev = UInt64(st.st_dev)
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
        let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
        let wanted = String(major, radix: 16) + ":" + String(minor, radix: 16) + ":\(st.st_ino)"
        guard let file = fopen("/proc/locks", "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; lines " -> " are waiters.
            let fields = String(cString: line).split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[2] != "->" else { continue }
            let id = fields[5].split(separator: ":")
            guard id.count == 3, let ma = UInt64(id[0], radix: 16), let mi = UInt64(id[1], radix: 16) else {
                continue
            }
            if String(ma, radix: 16) + ":" + String(mi, radix: 16) + ":" + id[2] == wanted {
                return Int32(fields[4])
            }
        }
        return nil
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
            if name.hasPrefix(fileName + ".") { continue }
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
