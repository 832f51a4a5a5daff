// Removes one queued file beneath its managed root without following a symlink anywhere:
// each folder is opened with O_NOFOLLOW relative to the one above, the file is checked to be
// the regular file recorded (device, inode), and only then unlinkat'ed. Never rmdir. With
// `files.skip_open` an OpenFileProbe decides first whether the file is open anywhere.

import Glibc

/// What happened to one queued file.
enum UnlinkOutcome: Equatable {
    /// Removed.
    case removed
    /// Already gone (ENOENT): counts as done.
    case alreadyGone
    /// Something else is at the path now (another inode, a folder): kept.
    case identityChanged
    /// A symlink on the way, or the path is no longer under a root: nothing removed.
    case unsafePath
    /// The unlink failed; retried later.
    case failed(errno: Int32, call: String)
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
    /// Where the kernel had the cached folder when the walk opened it (nil: unknown, so the
    /// folder is never used again).
    private var cachedLocation: [UInt8]?

    deinit { closeCached() }

    private func closeCached() {
        if cachedFD >= 0 { close(cachedFD) }
        cachedFD = -1
        cachedFolder = nil
        cachedDevice = nil
        cachedLocation = nil
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
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { readlink("/proc/self/fd/\(fd)", $0, b.count) }
        }
        guard n > 0, n < linkBuffer.count else { return nil }
        return linkBuffer[..<n]
    }

    /// Removes `path` (normalised, strictly below `root`) if it is the recorded file and,
    /// given a `probe`, nobody has it open. `deviceNow`: the number the recorded device's
    /// filesystem has now, when a root's filesystem was renumbered; the file is on either.
    func unlink(
        path: String, root: String, device: Int64?, inode: Int64?, deviceNow: Int64? = nil, probe: OpenFileProbe? = nil
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
            case .success(let fd):
                dirfd = fd
                cachedFD = fd
                cachedFolder = folder
                cachedDevice = SafeUnlinker.device(of: fd)
                cachedLocation = location(of: fd).map(Array.init)
            case .missing(let folderDevice):
                return SafeUnlinker.gone(folderDevice: folderDevice, device: device, deviceNow: deviceNow)
            case .failure(let outcome):
                return outcome
            }
        }
        var st = stat()
        if fstatat(dirfd, String(leaf), &st, AT_SYMLINK_NOFOLLOW) != 0 {
            let e = errno
            return e == ENOENT || e == ENOTDIR
                ? SafeUnlinker.gone(folderDevice: cachedDevice, device: device, deviceNow: deviceNow)
                : .failed(errno: e, call: "fstatat")
        }
        switch st.st_mode & S_IFMT {
        case S_IFLNK: return .unsafePath
        case S_IFREG: break
        default: return .identityChanged
        }
        // The recorded number first: a filesystem mounted below the root may have the number
        // the root's had before it was renumbered, and its files are still recorded rightly.
        let onDevice = Int64(bitPattern: UInt64(st.st_dev))
        guard let recorded = device, let inode, onDevice == recorded || onDevice == deviceNow,
            Int64(bitPattern: UInt64(st.st_ino)) == inode
        else { return .identityChanged }
        let device = onDevice
        var leaseFD: Int32 = -1
        if let probe {
            switch probe.check(dirfd: dirfd, leaf: leaf, device: device, inode: inode) {
            case .clear(let fd): leaseFD = fd
            case .open: return .open
            case .undetermined(let why): return .undetermined(why)
            case .outcome(let o): return o
            }
        }
        // The lease lasts until the name is gone: an open racing us waits for it.
        defer { probe?.end(leaseFD) }
        if unlinkat(dirfd, String(leaf), 0) != 0 {
            let e = errno
            return e == ENOENT ? .alreadyGone : .failed(errno: e, call: "unlinkat")
        }
        return .removed
    }

    /// A folder opened; a name on the way missing, below a folder on this device; or another outcome.
    private enum OpenResult { case success(Int32), missing(folderDevice: Int64?), failure(UnlinkOutcome) }

    private static func device(of fd: Int32) -> Int64? {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(bitPattern: UInt64(st.st_dev)) : nil
    }

    /// The device of the deepest folder above a missing root that exists (the root is
    /// configuration: symlinks in it are followed).
    static func deviceAbove(_ root: String) -> Int64? {
        var bytes = Array(root.utf8)
        while let slash = bytes.lastIndex(of: UInt8(ascii: "/")) {
            bytes.removeSubrange(slash...)
            var st = stat()
            if stat(bytes.isEmpty ? "/" : String(decoding: bytes, as: UTF8.self), &st) == 0 {
                return Int64(bitPattern: UInt64(st.st_dev))
            }
        }
        return nil
    }

    /// A name of the path is missing below a folder on `folderDevice`: the file is gone, unless
    /// it was recorded on another filesystem (neither its recorded number nor `deviceNow`, the
    /// number a renumbered root's filesystem has now). Then that filesystem is not mounted
    /// where it was (a disk not mounted yet): the file is hidden, not gone, and its row must
    /// stay (I2), so it fails and is retried. (Where directories and files report different devices, as on
    /// overlayfs with layers on several filesystems and xino off, a vanished file fails too.)
    private static func gone(folderDevice: Int64?, device: Int64?, deviceNow: Int64?) -> UnlinkOutcome {
        isGone(folderDevice: folderDevice, device: device, deviceNow: deviceNow)
            ? .alreadyGone : .failed(errno: ENOENT, call: "lookup on another file system than the file's (not mounted?)")
    }

    /// The rule of `gone`, which verify's missing-file check shares: true when the file is
    /// gone, false when it is hidden on a filesystem not mounted where it was.
    static func isGone(folderDevice: Int64?, device: Int64?, deviceNow: Int64?) -> Bool {
        guard let device, let folderDevice else { return true }
        return folderDevice == device || folderDevice == deviceNow
    }

    private func openFolder(root: String, components: ArraySlice<String>) -> OpenResult {
        // The root itself is configuration and trusted; everything below it is not.
        var fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 {
            let e = errno
            // A root that is a folder on an unmounted filesystem is missing itself: judged
            // by the folder above it that exists, as a missing folder below the root is.
            return e == ENOENT
                ? .missing(folderDevice: SafeUnlinker.deviceAbove(root)) : .failure(.failed(errno: e, call: "open"))
        }
        for c in components {
            let next = openat(fd, String(c), SafeUnlinker.oPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 {
                let e = errno
                var st = stat()
                let isLink = fstatat(fd, String(c), &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
                let folderDevice = SafeUnlinker.device(of: fd)
                close(fd)
                if isLink || e == ELOOP { return .failure(.unsafePath) }
                if e == ENOENT || e == ENOTDIR { return .missing(folderDevice: folderDevice) }
                return .failure(.failed(errno: e, call: "openat"))
            }
            close(fd)
            fd = next
        }
        return .success(fd)
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
