// Removes one queued file beneath its managed root without following a symlink anywhere or
// crossing a mount: each folder is opened with O_NOFOLLOW relative to the one above and must
// be on the root's mount, the file is checked to be the regular file recorded (device, inode,
// and its FileStamp), and only then unlinkat'ed. Never rmdir. With `files.skip_open` an
// OpenFileProbe decides first whether the file is open anywhere.

import Glibc
import Synchronization

/// What happened to one queued file.
enum UnlinkOutcome: Equatable {
    /// Removed.
    case removed
    /// Already gone (ENOENT): counts as done.
    case alreadyGone
    /// Something else is at the path now (another inode, a folder): kept.
    case identityChanged
    /// A symlink or a mount point on the way: nothing removed.
    case unsafePath
    /// The unlink failed; retried later.
    case failed(errno: Int32, call: String)
    /// The path is under no configured root (one removed from the configuration, or a
    /// `--db` open with another config): nothing removed, retried later, so re-adding the
    /// root removes it.
    case notUnderRoot
    /// The file's filesystem is not where it was: not mounted (a disk that failed to mount),
    /// or gone for good (the root moved to another disk). Nothing removed; retried, then
    /// parked (the real file may come back); why.
    case otherFilesystem(String)
    /// Some process has it open (`files.skip_open`): kept, retried later.
    case open
    /// Whether it is open could not be told (`files.skip_open`): kept, retried later; why.
    case undetermined(String)
}

/// Opens folders below roots with O_NOFOLLOW, keeping the last one open while it is still
/// where it was opened: a sweep removes many files from the same folder. Short-lived: one per
/// sweep batch. "No such file" counts as done only on the file's own filesystem.
final class SafeUnlinker {
    // O_PATH (Linux) is not exported by the Glibc module; the value is fixed by the kernel ABI.
    static let oPath: Int32 = 0o10000000
    private var cachedFolder: [UInt8]?
    private var cachedFD: Int32 = -1
    /// The device the cached folder is on.
    private var cachedDevice: Int64?
    /// The cached folder's status: the file must be on its mount.
    private var cachedStatus: FileStatus?
    /// The configured roots: a mount at one of them (a nested root) is its own, not a crossing.
    private let roots: [String]
    /// What each root was when the store opened: another folder at its path is not opened.
    private let pins: RootPins
    /// The store's own files (its database, WAL, lock, reserve): never unlinked, whatever
    /// path names them (a bind mount of the database's folder inside a root, a hard link).
    private let own: Set<FileID>

    /// Where the kernel had the cached folder when the walk opened it (nil: unknown, so the
    /// folder is never used again).
    private var cachedLocation: [UInt8]?
    /// The cached folder is on a network root's mount: the name's last look is afresh.
    private var cachedOnNetwork = false
    /// The roots on a network file system (RootPins.isNetwork), read once.
    private let networkRoots: Set<String>

    /// An unlinker for files below `roots` (all configured roots, for nested ones that are
    /// mount points), each pinned to the folder it was, that never unlinks one of `own`.
    init(roots: ManagedRoots, own: Set<FileID> = []) {
        self.roots = roots.paths
        self.pins = roots.pins
        self.own = own
        networkRoots = roots.pins.onNetwork(roots.paths)
    }

    deinit { closeCached() }

    private func closeCached() {
        if cachedFD >= 0 { close(cachedFD) }
        cachedFD = -1
        cachedFolder = nil
        cachedDevice = nil
        cachedStatus = nil
        cachedLocation = nil
        cachedOnNetwork = false
    }

    /// True if the cached folder is still where the walk found it. The kernel's path of the
    /// open folder changes when it, or any folder above it, is moved (out of the root, or away
    /// and replaced by a symlink to where it went); the path's own lookup would follow such a
    /// symlink and find the same folder. One readlink per file instead of a walk.
    private func cachedStillThere() -> Bool {
        guard let cachedLocation, let now = location(of: cachedFD) else { return false }
        return now.elementsEqual(cachedLocation)
    }

    /// Room for readlink, kept for the unlinker's life: one allocation, not one per file.
    private var linkBuffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)

    /// The path the kernel has for an open folder (/proc/self/fd), or nil without /proc.
    private func location(of fd: Int32) -> ArraySlice<UInt8>? {
        let n = linkBuffer.withUnsafeMutableBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) {
                readlink("/proc/self/fd/\(fd)", $0, b.count)
            }
        }
        guard n > 0, n < linkBuffer.count else { return nil }
        return linkBuffer[..<n]
    }

    /// Removes `path` (normalised, strictly below `root`) if it is the recorded file (its
    /// `stamp`, and `size` bytes for the ctime fallback) and, given a `probe`, nobody has it
    /// open. `deviceNow`: the number the recorded device's filesystem has now, when a root's
    /// filesystem was renumbered; the file is on either.
    func unlink(
        path: String, root: String, device: Int64?, inode: Int64?, stamp: FileStamp = .none, size: Int64? = nil,
        deviceNow: Int64? = nil, probe: OpenFileProbe? = nil
    ) -> UnlinkOutcome {
        // Split at the last "/" byte; the folder stays bytes, because String equality would
        // match canonically equal but different names.
        let bytes = Array(path.utf8)
        guard bytes.count > root.utf8.count + 1, let slash = bytes.lastIndex(of: UInt8(ascii: "/")),
            slash >= root.utf8.count, slash + 1 < bytes.count
        else { return .unsafePath }
        let folder = Array(bytes[..<slash])
        let leaf = String(decoding: bytes[(slash + 1)...], as: UTF8.self)
        let dirfd: Int32
        if folder == cachedFolder, cachedStillThere() {
            dirfd = cachedFD
        } else {
            closeCached()
            switch openFolder(root: root, components: ManagedRoots.components(of: path, below: root).dropLast()) {
            case .success(let fd, let status, let onNetwork):
                dirfd = fd
                cachedFD = fd
                cachedFolder = folder
                cachedStatus = status
                cachedDevice = status.device
                cachedLocation = location(of: fd).map(Array.init)
                cachedOnNetwork = onNetwork
            case .missing(let folderDevice):
                return SafeUnlinker.gone(folderDevice: folderDevice, device: device, deviceNow: deviceNow)
            case .failure(let outcome):
                return outcome
            }
        }
        // Set with cachedFD: the folder's mount, which the file must be on.
        guard let folderStatus = cachedStatus else { return .failed(errno: EBADF, call: "statx") }
        // The name opened O_PATH, which asks its filesystem nothing (a mount over the name is
        // reached, not opened), and every later look made on that descriptor once it is
        // known to be on the folder's mount: a mount made over the name meanwhile is asked
        // nothing (a FUSE server need never answer; assetd(8), "The unlink queue").
        var fileFD = openat(dirfd, leaf, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
        if fileFD < 0 {
            let e = errno
            return e == ENOENT || e == ENOTDIR
                ? SafeUnlinker.gone(folderDevice: cachedDevice, device: device, deviceNow: deviceNow)
                : .failed(errno: e, call: "openat")
        }
        // The probe closes it before asking a lease (then the lease's descriptor holds the file).
        defer { if fileFD >= 0 { close(fileFD) } }
        // From the kernel's cache first: its mount before anything is asked of it.
        var st: FileStatus
        switch FileStatus.cached(fileFD, "") {
        case .success(let s): st = s
        case .failure(let e): return .failed(errno: e.code, call: "statx")
        }
        // A file bind-mounted over the name (or a mount of any kind there) is not this root's.
        if st.onAnotherMount(than: folderStatus) { return .unsafePath }
        switch st.kind {
        case S_IFLNK: return .unsafePath
        case S_IFREG: break
        default: return .identityChanged
        }
        SafeUnlinker.stepped(root, path)
        // Judged by ctime and size (no birth time or generation recorded, as on NFS and FUSE):
        // those the root's own filesystem gives afresh.
        if stamp.birth == nil, stamp.generation == nil {
            switch FileStatus.of(fileFD, "") {
            case .success(let s) where s.inode == st.inode && s.device == st.device: st = s
            case .success: return .identityChanged
            case .failure(let e): return .failed(errno: e.code, call: "statx")
            }
        }
        // The recorded number first: a filesystem mounted below the root may have the number
        // the root's had before it was renumbered, and its files are still recorded rightly.
        let onDevice = st.device
        guard let recorded = device, let inode else { return .identityChanged }
        // A file of another filesystem: the recorded one is not mounted here now (a disk that
        // failed to mount, a stale file in its empty mount point). The queued file is hidden,
        // not replaced: its row stays and is retried, as for a missing one.
        guard onDevice == recorded || onDevice == deviceNow else {
            return .otherFilesystem("statx: a file of another file system than the one recorded (not mounted?)")
        }
        guard st.inode == inode else { return .identityChanged }
        let device = onDevice
        // The store's own file under another name: the put refuses it now, but a row may be
        // older, or the inode number taken again by the database's WAL.
        if own.contains(FileID(device: device, inode: inode)) { return .unsafePath }
        // The same number is not the same file: ext4 gives a freed inode number to the next
        // file at once. The generation needs the file open, so it is read only when recorded.
        var now = st.stamp
        if stamp.generation != nil {
            switch FileGeneration.read(pathFD: fileFD, dirfd: dirfd, leaf: leaf, device: device, inode: inode) {
            case .success(let g): now.generation = g
            case .failure(let e) where e.code == ENOENT: return .alreadyGone
            case .failure(let e) where e.code == ELOOP || e.code == ESTALE: return .identityChanged
            case .failure(let e): return .failed(errno: e.code, call: "open (to read its generation)")
            }
        }
        guard stamp.matches(now, size: size, sizeNow: st.size) else { return .identityChanged }
        var leaseFD: Int32 = -1
        if let probe {
            switch probe.check(pathFD: &fileFD, dirfd: dirfd, leaf: leaf, device: device, inode: inode) {
            case .clear(let fd): leaseFD = fd
            case .open: return .open
            case .undetermined(let why): return .undetermined(why)
            case .outcome(let o): return o
            }
        }
        // The lease lasts until the name is gone: an open racing us waits for it.
        defer { probe?.end(leaseFD) }
        // The probe may have read all of /proc meanwhile (tens of ms): a file renamed over the
        // name since must not be the one unlinked.
        if probe != nil,
            let changed = SafeUnlinker.recheck(
                dirfd: dirfd, leaf: leaf, as: st, generation: now.generation, folder: folderStatus,
                heldOpen: leaseFD >= 0)
        {
            return changed
        }
        // The name's last look, from the kernel's cache (a mount over it is asked nothing): a
        // file renamed over the name since it was opened is not the one judged. The judged file
        // is still held (its O_PATH descriptor or the lease's), so its inode number cannot have
        // gone to another file: the same mount, device and inode is the same file. (A probe
        // that closed the O_PATH one but got no lease decided by /proc: the recheck then
        // compared the whole stamp.)
        switch FileStatus.cached(dirfd, leaf) {
        case .success(let s) where s.onAnotherMount(than: st): return .unsafePath
        case .success(let s) where s.device == st.device && s.inode == st.inode: break
        case .success: return .identityChanged
        case .failure(let e) where e.code == ENOENT: return .alreadyGone
        case .failure(let e): return .failed(errno: e.code, call: "statx")
        }
        if cachedOnNetwork {
            pins.freshLooks.add(1, ordering: .relaxed)
            if let changed = SafeUnlinker.lookAfresh(dirfd: dirfd, leaf: leaf, as: st) { return changed }
        }
        if unlinkat(dirfd, String(leaf), 0) != 0 {
            let e = errno
            return e == ENOENT ? .alreadyGone : .failed(errno: e, call: "unlinkat")
        }
        return .removed
    }

    /// A folder opened; a name on the way missing, below a folder on this device; or another outcome.
    private enum OpenResult {
        /// The folder, its mount as the kernel's cache has it, and whether that is a network
        /// root's.
        case success(Int32, FileStatus, onNetwork: Bool)
        case missing(folderDevice: Int64?)
        case failure(UnlinkOutcome)
    }

    private static func device(of fd: Int32) -> Int64? {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(bitPattern: UInt64(st.st_dev)) : nil
    }

    /// A name of the path is missing below a folder on `folderDevice`: the file is gone, unless
    /// it was recorded on another filesystem (neither its recorded number nor `deviceNow`, the
    /// number a renumbered root's filesystem has now). Then that filesystem is not mounted
    /// where it was (a disk not mounted yet): the file is hidden, not gone, and its row must
    /// stay (I2), so it fails and is retried. (Where directories and files report different devices, as on
    /// overlayfs with layers on several filesystems and xino off, a vanished file fails too.)
    private static func gone(folderDevice: Int64?, device: Int64?, deviceNow: Int64?) -> UnlinkOutcome {
        isGone(folderDevice: folderDevice, device: device, deviceNow: deviceNow)
            ? .alreadyGone
            : .otherFilesystem("lookup on another file system than the file's (not mounted?)")
    }

    /// The rule of `gone`, which verify's missing-file check shares: true when the file is
    /// gone, false when it is hidden on a filesystem not mounted where it was, or when no
    /// folder on its way could be looked at (a missing root says nothing of its files).
    static func isGone(folderDevice: Int64?, device: Int64?, deviceNow: Int64?) -> Bool {
        guard let device else { return true }  // never seen on disk: nothing could hide it
        guard let folderDevice else { return false }
        return folderDevice == device || folderDevice == deviceNow
    }

    private func openFolder(root: String, components: ArraySlice<String>) -> OpenResult {
        // The root itself is configuration and trusted, its own mount too; everything below it
        // is not, and no folder on the way may be on another mount (a bind mount of the same
        // filesystem included) unless it is a configured root. The root must still be the
        // folder it was when the store opened (or a disk mounted there since); another one
        // keeps the row, retried (the swap undone lets it go on).
        var fd: Int32
        switch pins.open(root, flags: O_RDONLY) {
        case .folder(let opened): fd = opened
        case .moved:
            return .failure(
                .failed(
                    errno: ESTALE,
                    call: "open \(root) (not the folder it was when assetd started: replaced?)"))
        case .failed(let e):
            // A missing root says nothing about its files: renamed away on its own file system
            // (they are all still there), on a disk not mounted now, or removed. The row is
            // kept and retried; `assetctl forget` drops rows of a root removed for good.
            let why = e == ENOENT ? "open \(root) (the root is missing: renamed or removed?)" : "open"
            return .failure(.failed(errno: e, call: why))
        }
        // A folder whose mount cannot be told is not gone below (fail closed).
        var mount: FileStatus
        switch FileStatus.cached(fd, "") {
        case .success(let s): mount = s
        case .failure(let e):
            close(fd)
            return .failure(.failed(errno: e.code, call: "statx"))
        }
        var here = mount
        var prefix = Array(root.utf8)
        var onNetwork = !networkRoots.isEmpty && networkRoots.contains(root)
        for c in components {
            let next = openat(fd, String(c), SafeUnlinker.oPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 {
                let e = errno
                // Cached: a file with a FUSE mount over it (ENOTDIR) is not asked anything.
                let isLink = (try? FileStatus.cached(fd, String(c)).get())?.kind == S_IFLNK
                let folderDevice = SafeUnlinker.device(of: fd)
                close(fd)
                // A nested root is a root: missing, or a symlink now, it hides its files (moved
                // away with them, to come back), as a missing outer root does.
                let here = prefix + [UInt8(ascii: "/")] + Array(c.utf8)
                if roots.contains(where: { $0.utf8.elementsEqual(here) }) {
                    let root = String(decoding: here, as: UTF8.self)
                    let replaced = "open \(root) (not the folder it was when assetd started: replaced?)"
                    return .failure(
                        isLink || e == ELOOP
                            ? .failed(errno: ESTALE, call: replaced)
                            : .failed(errno: e, call: "open \(root) (the root is missing: renamed or removed?)"))
                }
                if isLink || e == ELOOP { return .failure(.unsafePath) }
                if e == ENOENT || e == ENOTDIR { return .missing(folderDevice: folderDevice) }
                return .failure(.failed(errno: e, call: "openat"))
            }
            close(fd)
            fd = next
            prefix += [UInt8(ascii: "/")] + Array(c.utf8)
            // Which mount it is on from the kernel's cache, before anything asks that mount.
            switch FileStatus.cached(fd, "") {
            case .success(let s): here = s
            case .failure(let e):
                close(fd)
                return .failure(.failed(errno: e.code, call: "statx"))
            }
            if here.onAnotherMount(than: mount) {
                guard roots.contains(where: { $0.utf8.elementsEqual(prefix) }) else {
                    close(fd)
                    return .failure(.unsafePath)
                }
                mount = here
                if !networkRoots.isEmpty { onNetwork = networkRoots.contains(String(decoding: prefix, as: UTF8.self)) }
            }
        }
        return .success(fd, here, onNetwork: onNetwork)
    }
}

extension SafeUnlinker {
    /// Tests: run with the path of each queued file below a root (the key) once its mount and
    /// type are checked, before anything else looks at it.
    static let stepHooks = Mutex<[String: @Sendable (String) -> Void]>([:])
    /// True once a test set a hook: the unlinker does not lock for none.
    static let anyStepHook = Atomic<Bool>(false)

    private static func stepped(_ root: String, _ path: String) {
        guard anyStepHook.load(ordering: .relaxed) else { return }
        stepHooks.withLock { $0[root] }?(path)
    }
}

/// "EACCES (Permission denied)".
func errnoDescription(_ e: Int32) -> String {
    let names: [Int32: String] = [
        EACCES: "EACCES", EPERM: "EPERM", EBUSY: "EBUSY", EROFS: "EROFS", EIO: "EIO", ENOENT: "ENOENT",
        ENOTDIR: "ENOTDIR", ELOOP: "ELOOP", EISDIR: "EISDIR", ENOSPC: "ENOSPC", EMFILE: "EMFILE", ENFILE: "ENFILE",
    ]
    return "\(names[e] ?? "errno \(e)") (\(String(cString: strerror(e))))"
}
