// The unlinker's last look before unlinkat when an open-file check ran in between: that check
// may have read all of /proc (tens of milliseconds), time enough for a service replacing the
// file atomically (write a new one, rename it over the name) to put another file there. And
// on a network root, the last look asked of the server (`lookAfresh`).

import Glibc

extension SafeUnlinker {
    /// Nil if `leaf` in `dirfd` is still the regular file `checked` was (device, inode, and
    /// its stamp with `generation`, if one was read) on the folder's mount; else the outcome.
    /// `heldOpen`: the probe holds the checked file open (its lease), so its inode number
    /// cannot have gone to another file and the generation is not read again.
    static func recheck(
        dirfd: Int32, leaf: String, as checked: FileStatus, generation: Int64?, folder: FileStatus?, heldOpen: Bool
    ) -> UnlinkOutcome? {
        // As in `unlink`: the name opened O_PATH, its mount from the kernel's cache, and every
        // later look on that descriptor, so a mount over the name is asked nothing.
        let fileFD = openat(dirfd, leaf, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
        if fileFD < 0 {
            let e = errno
            return e == ENOENT ? .alreadyGone : .failed(errno: e, call: "openat")
        }
        defer { close(fileFD) }
        var st: FileStatus
        switch FileStatus.cached(fileFD, "") {
        case .success(let s): st = s
        case .failure(let e): return .failed(errno: e.code, call: "statx")
        }
        if let folder, st.onAnotherMount(than: folder) { return .unsafePath }
        switch st.kind {
        case S_IFLNK: return .unsafePath
        case S_IFREG: break
        default: return .identityChanged
        }
        // Judged by ctime and size: asked afresh of the root's own filesystem.
        if checked.birth == nil, generation == nil {
            switch FileStatus.of(fileFD, "") {
            case .success(let s) where s.inode == st.inode && s.device == st.device: st = s
            case .success: return .identityChanged
            case .failure(let e): return .failed(errno: e.code, call: "statx")
            }
        }
        guard st.device == checked.device, st.inode == checked.inode else { return .identityChanged }
        // Judged as the recorded stamp was: birth time and generation where there are, else
        // ctime and size (a file still written to then reads as changed: kept, never lost).
        var expected = checked.stamp
        expected.generation = generation
        var now = st.stamp
        if let generation {
            if heldOpen {
                now.generation = generation
            } else {
                switch FileGeneration.read(
                    pathFD: fileFD, dirfd: dirfd, leaf: leaf, device: st.device, inode: st.inode)
                {
                case .success(let g): now.generation = g
                case .failure(let e) where e.code == ENOENT: return .alreadyGone
                case .failure(let e) where e.code == ELOOP || e.code == ESTALE: return .identityChanged
                case .failure(let e): return .failed(errno: e.code, call: "open (to read its generation)")
                }
            }
        }
        return expected.matches(now, size: checked.size, sizeNow: st.size) ? nil : .identityChanged
    }

    /// On a network root (RootPins.isNetwork), the name's last look asked of the server: the
    /// kernel's cache of a name and its inode holds for seconds (NFS's attribute cache), and a
    /// host elsewhere may have renamed another file over the name meanwhile (assetd(8), The
    /// unlink queue). The folder is asked first, so a change to it drops the names its client
    /// cached and the name is looked up again; then the name opened O_PATH and its mount read
    /// from the cache, as everywhere (a mount over the name is asked nothing); then the file
    /// asked afresh. Nil if it is still the judged file (`judged`'s device and inode, on its
    /// mount); else the outcome.
    static func lookAfresh(dirfd: Int32, leaf: String, as judged: FileStatus) -> UnlinkOutcome? {
        if case .failure(let e) = FileStatus.synced(dirfd, "") { return .failed(errno: e.code, call: "statx") }
        let fileFD = openat(dirfd, leaf, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
        if fileFD < 0 {
            let e = errno
            return e == ENOENT ? .alreadyGone : .failed(errno: e, call: "openat")
        }
        defer { close(fileFD) }
        switch FileStatus.cached(fileFD, "") {
        case .success(let s) where s.onAnotherMount(than: judged): return .unsafePath
        case .success: break
        case .failure(let e): return .failed(errno: e.code, call: "statx")
        }
        switch FileStatus.synced(fileFD, "") {
        case .success(let s) where s.device == judged.device && s.inode == judged.inode && s.kind == S_IFREG: return nil
        case .success: return .identityChanged
        case .failure(let e) where e.code == ESTALE: return .identityChanged
        case .failure(let e): return .failed(errno: e.code, call: "statx")
        }
    }
}
