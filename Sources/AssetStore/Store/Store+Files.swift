// The database's names and the files the store makes beside it.
//
// The lock is `<db>.lock`, taken by name: a second name for the same file (a hard link)
// would open it under another lock and with another `-wal`, two writers on one file. So a
// database with more than one name is refused, by the daemon and by `assetctl --db` alike.
//
// Root running `assetctl --db` on a store that a daemon of another user owns must not leave
// files that daemon cannot open: the lock and the ballast it creates are given to the
// database file's owner, as SQLite gives its `-wal` and `-shm`.

import Glibc

extension Store {
    /// Why the database at `path` must not be opened under its lock's name: it has other
    /// names (hard links), each of which would have a lock and a WAL of its own.
    static func otherNames(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0, st.st_nlink > 1 else { return nil }
        return "\(path) has \(st.st_nlink) names (hard links): the lock is taken by name, so a"
            + " process opening it by another name would write it unlocked, beside a WAL of its own."
            + " Remove the other names (find -samefile \(path) lists them); a copy is made with"
            + " `assetctl backup`"
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

    /// Gives the file open at `fd`, just created with O_EXCL, to this owner; the errno if not.
    func give(_ fd: Int32) -> Int32? {
        fchown(fd, uid, gid) == 0 ? nil : errno
    }
}
