// The database's names and the files the store makes beside it.
//
// The lock is `<db>.lock`, taken by name: a second name for the same file (a hard link)
// would open it under another lock and with another `-wal`, two writers on one file. So a
// database with more than one name is refused, by the daemon and by `assetctl --db` alike,
// and a name through a symlink is resolved first, so that it takes the one lock.
//
// Root running `assetctl --db` on a store that a daemon of another user owns must not leave
// files that daemon cannot open: the lock and the ballast it creates are given to the
// database file's owner, as SQLite gives the `-wal` and `-shm` it creates. Made and, if they
// cannot be given, removed through a descriptor of their folder, only while their name still
// refers to them: that owner may swap the name, or the folder for a symlink, meanwhile. SQLite
// opens its side files by name, lazily, and never one with another name or not a regular file
// (side_files.c).

import Foundation
import Glibc
import Synchronization

extension Store {
    /// `path` with every symlink resolved (those of its folder only, when the database does
    /// not exist yet): the name the lock, the link count and the ballast go by.
    public static func realName(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        let cut = path.lastIndex(of: "/")
        let folder = cut.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = cut.map { String(path[path.index(after: $0)...]) } ?? path
        guard let resolved = realpath(folder, nil) else { return path }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return (base == "/" ? "" : base) + "/" + name
    }

    /// Why the database at `path` must not be opened: a symlink in its name (at the name or a
    /// folder of it) of a user other than root and this process's. Its owner could point it
    /// anywhere, and root would create, write and lock the target. SQLite itself follows no
    /// such symlink either, one put there after this look included (side_files.c).
    public static func foreignSymlink(_ path: String) -> String? {
        let euid = geteuid()
        var prefix = path.hasPrefix("/") ? "" : FileManager.default.currentDirectoryPath
        for part in path.split(separator: "/") {
            prefix += "/" + part
            var st = stat()
            guard lstat(prefix, &st) == 0 else { return nil }
            if st.st_mode & S_IFMT == S_IFLNK && st.st_uid != 0 && st.st_uid != euid {
                return "\(prefix) is a symlink of user \(st.st_uid): the store follows only root's or its own."
                    + " Give the database's real name"
            }
        }
        return nil
    }

    /// Why the database at `path` must not be opened under its lock's name: it has other
    /// names (hard links), each of which would have a lock and a WAL of its own.
    public static func otherNames(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0, st.st_nlink > 1 else { return nil }
        return "\(path) has \(st.st_nlink) names (hard links): the lock is taken by name, so a"
            + " process opening it by another name would write it unlocked, beside a WAL of its own."
            + " Remove the other names (find -samefile \(path) lists them); a copy is made with"
            + " `assetctl backup`"
    }

    /// Why SQLite refuses a side file of the database at `path` (side_files.c): a `-wal`,
    /// `-shm` or `-journal` with other names, or that is not a regular file. Only to say
    /// so once an open failed: the refusal itself is in the open, which no rename can race.
    static func refusedSideFile(_ path: String) -> (why: String, linked: Bool)? {
        for name in ["-wal", "-shm", "-journal"].map({ path + $0 }) {
            var st = stat()
            guard lstat(name, &st) == 0 else { continue }
            if st.st_mode & S_IFMT != S_IFREG {
                return ("\(name) is not a regular file: SQLite refuses it (never through a symlink); remove it", false)
            }
            if st.st_nlink > 1 {
                let why =
                    "\(name) has \(st.st_nlink) names (hard links): SQLite refuses it rather than write it"
                    + " (or, as root, give it to the database's owner). Remove it, or its other names"
                    + " (find -samefile \(name) lists them) if it is this database's"
                return (why, true)
            }
        }
        return nil
    }
}

/// Who owns the files the store creates beside its database, when it is not this process.
struct StoreFileOwner: Sendable {
    let uid: uid_t
    let gid: gid_t

    /// The owner of the database at `path`, when this process is root and the database is
    /// another user's; nil otherwise (the files are this process's, as it created them).
    static func of(database path: String) -> StoreFileOwner? {
        guard geteuid() == 0 else { return nil }
        var st = stat()
        guard stat(path, &st) == 0, st.st_uid != 0 || st.st_gid != 0 else { return nil }
        return StoreFileOwner(uid: st.st_uid, gid: st.st_gid)
    }

    /// Gives the file open at `fd`, just created with O_EXCL as `path`, to this owner; the
    /// errno if not.
    func give(_ fd: Int32, _ path: String) -> Int32? {
        if let refused = StoreFileOwner.giveRefused.withLock({ $0 })?(path) { return refused }
        return fchown(fd, uid, gid) == 0 ? nil : errno
    }

    /// Tests: asked with the path of each file about to be given away; an errno it returns
    /// stands for fchown's.
    static let giveRefused = Mutex<(@Sendable (String) -> Int32?)?>(nil)

    /// What `create` did.
    enum Created {
        case file(Int32)
        /// Not created (EEXIST: the name was taken): the errno.
        case failed(Int32)
        /// Created, but not given to the owner: the errno of that. The file was removed if its
        /// name still referred to it.
        case notGiven(Int32)
    }

    /// Creates `name` in the folder open at `dir` (`flags` with O_CREAT | O_EXCL) and gives it
    /// to `owner`, if any (`path` names it in errors and to the test hook). One that cannot be
    /// given is removed by its name in that folder only while the name still refers to it
    /// (device and inode, against the open descriptor): unlinked by path, a name the folder's
    /// owner had meanwhile given to a file of theirs, or a folder swapped for a symlink, had
    /// root remove what they chose, elsewhere too. Between that look and the unlink the name
    /// can still change, but only within this folder, whose owner may remove its names anyway.
    static func create(
        in dir: Int32, _ name: String, path: String, flags: Int32, mode: mode_t, owner: StoreFileOwner?
    ) -> Created {
        let fd = openat(dir, name, flags | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else { return .failed(errno) }
        guard let owner, let e = owner.give(fd, path) else { return .file(fd) }
        removeIfNamed(fd, name, in: dir)
        close(fd)
        return .notGiven(e)
    }

    /// Removes `name` from the folder open at `dir` if it still names the file open at `fd`.
    static func removeIfNamed(_ fd: Int32, _ name: String, in dir: Int32) {
        var mine = stat()
        var named = stat()
        guard fstat(fd, &mine) == 0, fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0,
            mine.st_dev == named.st_dev, mine.st_ino == named.st_ino
        else { return }
        unlinkat(dir, name, 0)
    }

    /// The folder and the last name of `path`.
    static func split(_ path: String) -> (folder: String, name: String) {
        let cut = path.lastIndex(of: "/")
        let folder = cut.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = cut.map { String(path[path.index(after: $0)...]) } ?? path
        return (folder, name)
    }

    /// The folder of `path` open as a directory (a descriptor to make names in), or -1 with
    /// errno set. O_PATH: like a path, it needs no read permission on the folder.
    static func openFolder(of path: String) -> Int32 {
        open(split(path).folder, StoreFileOwner.pathOnly | O_DIRECTORY | O_CLOEXEC)
    }

    /// O_PATH (Linux, the same on x86-64 and arm64), which the Glibc module does not export.
    static let pathOnly: Int32 = 0o10_000_000
}

extension FileID {
    /// The device and inode stat gave.
    init(_ st: stat) {
        self.init(device: Int64(bitPattern: UInt64(st.st_dev)), inode: Int64(bitPattern: UInt64(st.st_ino)))
    }
}

extension Store {
    /// What the store keeps beside the database, by suffix: SQLite's side files, the lock, and
    /// the reserve (Store+Reserve.swift), under its second name while being allocated.
    static let ownSuffixes = ["", "-wal", "-shm", "-journal", ".lock", ".ballast", ".ballast.new"]

    /// The device and inode of each of the store's own files there now (beside the database
    /// as named and as resolved). A file with one of them is never registered, unlinked nor
    /// taken for an orphan, whatever path names it: a bind mount of the database's folder
    /// inside a root, or a hard link there, names it below a root (assetd(8), Managed roots).
    func ownFileIDs() -> Set<FileID> {
        var out = Set<FileID>()
        for base in Set([path, Store.realName(path)]) {
            for suffix in Store.ownSuffixes {
                var st = stat()
                if stat(base + suffix, &st) == 0 { out.insert(FileID(st)) }
            }
        }
        return out
    }

    /// The device of the database's folder (st_dev), where the store's own files are: a file
    /// on another one is none of them, and nothing more is looked at for it.
    static func folderDevice(of database: String) -> Int64? {
        var st = stat()
        guard stat((database as NSString).deletingLastPathComponent, &st) == 0 else { return nil }
        return Int64(bitPattern: UInt64(st.st_dev))
    }
}
