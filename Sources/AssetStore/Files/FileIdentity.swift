// What tells a registered file from a later one at its path that got the same inode number
// (ext4 hands a freed number out again at once), and which mount a name is on: statx,
// FS_IOC_GETVERSION and openat2 through the CFileIdentity shim. See assetd(8), "The unlink
// queue".

import CFileIdentity
import Glibc

/// What the registry records beside (device, inode) to know a file again: its birth time
/// and inode generation where the filesystem has them, its ctime otherwise.
///
/// A birth time or a generation never changes while the inode lives, so a file that was read,
/// written, appended to, chmod-ed or had its times set since is still the same file. Only
/// where neither exists (many NFS servers and FUSE filesystems, tmpfs on older kernels)
/// the ctime and size decide: then a file changed after its last put or touch (the registry
/// measures it again at both) is kept as `identity_changed` rather than risk removing
/// another program's file. A row recorded before these fields (all nil) is judged on
/// (device, inode) alone, as it always was.
public struct FileStamp: Sendable, Hashable {
    /// statx birth time, nanoseconds; nil where the filesystem reports none.
    public var birth: Int64?
    /// The inode generation (FS_IOC_GETVERSION); nil where the filesystem has none.
    public var generation: Int64?
    /// The status-change time, nanoseconds: the fallback when neither of the others exists.
    public var ctime: Int64?

    /// Nothing recorded.
    public static let none = FileStamp()

    /// Memberwise.
    public init(birth: Int64? = nil, generation: Int64? = nil, ctime: Int64? = nil) {
        self.birth = birth
        self.generation = generation
        self.ctime = ctime
    }

    /// True when `now`, read from the file at the path now (already known to have the
    /// recorded device and inode, and `sizeNow` bytes), is the file this stamp was recorded
    /// for (`size` bytes then). A field recorded but not readable now is a mismatch.
    func matches(_ now: FileStamp, size: Int64?, sizeNow: Int64) -> Bool {
        if birth != nil || generation != nil {
            return (birth == nil || birth == now.birth) && (generation == nil || generation == now.generation)
        }
        guard let ctime else { return true }
        return ctime == now.ctime && size == sizeNow
    }
}

/// One statx result, for the walks and checks that must not cross a mount.
struct FileStatus {
    var device: Int64
    var inode: Int64
    var mode: mode_t
    var size: Int64
    /// Unix seconds.
    var mtime: Double
    var ctime: Int64
    var birth: Int64?
    /// nil where neither statx nor /proc tells it: then only devices are compared.
    var mountID: UInt64?

    var kind: mode_t { mode & S_IFMT }

    /// The stamp statx alone gives (no generation: that needs the file open).
    var stamp: FileStamp { FileStamp(birth: birth, generation: nil, ctime: ctime) }

    /// True when `other` is on another mount than this (a bind mount of the same filesystem
    /// included); devices decide where a mount id is unknown.
    func onAnotherMount(than other: FileStatus) -> Bool {
        if let a = mountID, let b = other.mountID { return a != b }
        return device != other.device
    }

    /// statx of `path` relative to `dirfd` (a final symlink not followed; "" is `dirfd`
    /// itself), or the errno.
    static func of(_ dirfd: Int32, _ path: UnsafePointer<CChar>) -> Result<FileStatus, Errno> {
        var s = assetd_file_stat()
        guard assetd_file_stat(dirfd, path, &s) == 0 else { return .failure(Errno(errno)) }
        return .success(FileStatus(s))
    }

    /// statx of an absolute path (a final symlink not followed).
    static func of(_ path: String) -> Result<FileStatus, Errno> { of(AT_FDCWD, path) }

    /// `of` without asking the filesystem to refresh what it caches (AT_STATX_DONT_SYNC): the
    /// look that tells whether a name below a root is on another mount before anything asks
    /// that mount. On a FUSE mount a synced statx is a request its server need never answer,
    /// holding the writer for ever (assetd(8), "The unlink queue"). Mount id, device, inode
    /// and file type are exact; size and times may be stale on a network or FUSE filesystem,
    /// so a file on the root's own mount whose size or times matter is looked at again with `of`.
    /// `following`: a final symlink is followed (/proc/PID/fd/N).
    static func cached(
        _ dirfd: Int32, _ path: UnsafePointer<CChar>, following: Bool = false
    ) -> Result<FileStatus, Errno> {
        var s = assetd_file_stat()
        guard assetd_file_stat_cached(dirfd, path, following ? 1 : 0, &s) == 0 else { return .failure(Errno(errno)) }
        return .success(FileStatus(s))
    }

    /// `of` asking the filesystem afresh whatever it cached (AT_STATX_FORCE_SYNC): on a network
    /// filesystem the server's answer, not the attribute cache's (SafeUnlinker's last look).
    static func synced(_ dirfd: Int32, _ path: UnsafePointer<CChar>) -> Result<FileStatus, Errno> {
        var s = assetd_file_stat()
        guard assetd_file_stat_synced(dirfd, path, &s) == 0 else { return .failure(Errno(errno)) }
        return .success(FileStatus(s))
    }

}

extension FileStatus {
    /// What the shim's statx reported.
    init(_ s: assetd_file_stat) {
        self.init(
            device: Int64(bitPattern: s.device), inode: Int64(bitPattern: s.inode), mode: mode_t(s.mode), size: s.size,
            mtime: Double(s.mtime_sec) + Double(s.mtime_nsec) / 1e9, ctime: s.ctime_ns,
            birth: s.has_birth != 0 ? s.birth_ns : nil, mountID: s.has_mount_id != 0 ? s.mount_id : nil)
    }
}

/// The statfs(2) type (f_type) of the file system `path` is on, or nil when it cannot be
/// read (the Glibc module does not export statfs).
public func fileSystemType(of path: String) -> Int64? {
    var type: Int64 = 0
    return assetd_file_system_type(path, &type) == 0 ? type : nil
}

/// An errno as an Error, for `Result`.
struct Errno: Error, Equatable {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}

/// Whether the folder the O_PATH descriptor `pathFD` names has an access ACL (true too where
/// that cannot be told).
func hasAccessACL(pathFD: Int32) -> Bool { assetd_has_access_acl(pathFD) != 0 }

/// The inode the O_PATH descriptor `pathFD` names, opened again through /proc/self/fd with
/// `flags` (and O_NOATIME where permitted): no lookup by name. The descriptor, or -1 with
/// errno set (ENOSYS without /proc).
func reopen(pathFD: Int32, flags: Int32) -> Int32 { assetd_reopen_path_fd(pathFD, flags) }

/// Renames `from` to `to` unless `to` exists: 0, or -1 with errno set (EEXIST; EINVAL or
/// ENOSYS where the filesystem or kernel has no such rename). See file_identity.h.
func renameNoReplace(_ from: String, _ to: String) -> Int32 { assetd_rename_noreplace(from, to) }

/// An unnamed file open read-write in the folder `dir` (O_TMPFILE, which Swift does not
/// import), or -1 with errno (EOPNOTSUPP where the filesystem cannot make one).
func openTemporaryFile(in dir: String, mode: mode_t) -> Int32 { assetd_open_tmpfile(dir, UInt32(mode)) }

enum FileGeneration {
    // O_NOATIME (uapi fcntl.h), not exported by the Glibc module.
    private static let noAccessTime: Int32 = 0o1000000

    /// The generation of the regular file the O_PATH descriptor `pathFD` names, read through
    /// /proc/self/fd (so only that inode is opened): nil where the filesystem has none; the
    /// errno when it cannot be opened (ENOSYS without /proc).
    static func read(pathFD: Int32) -> Result<Int64?, Errno> {
        var has: Int32 = 0
        var generation: UInt32 = 0
        guard assetd_generation_of_path_fd(pathFD, &has, &generation) == 0 else { return .failure(Errno(errno)) }
        return .success(has != 0 ? Int64(generation) : nil)
    }

    /// The generation of the regular file (`device`, `inode`) the O_PATH descriptor `pathFD`
    /// names, its mount already checked: read through /proc/self/fd, so a mount made over its
    /// name since is asked nothing. Without /proc, `leaf` in `dirfd` is opened by name.
    static func read(pathFD: Int32, dirfd: Int32, leaf: String, device: Int64, inode: Int64) -> Result<Int64?, Errno> {
        switch read(pathFD: pathFD) {
        case .failure(let e) where e.code == ENOSYS: return read(dirfd: dirfd, leaf: leaf, device: device, inode: inode)
        case let other: return other
        }
    }

    /// The generation of `leaf` in the open folder `dirfd` (or an absolute path with
    /// AT_FDCWD): nil where the filesystem has none; the errno when it cannot be opened, and
    /// ESTALE when what opened is no longer the regular file (`device`, `inode`).
    static func read(dirfd: Int32, leaf: String, device: Int64, inode: Int64) -> Result<Int64?, Errno> {
        // Opened to ask, never blocking (a fifo swapped in, a lease someone holds) and not
        // touching the access time where permitted.
        let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
        var fd = openat(dirfd, leaf, flags | noAccessTime)
        if fd < 0 && errno == EPERM { fd = openat(dirfd, leaf, flags) }
        guard fd >= 0 else { return .failure(Errno(errno)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(Errno(errno)) }
        // Swapped between the caller's statx and this open: not the file asked about.
        guard (st.st_mode & S_IFMT) == S_IFREG, Int64(bitPattern: UInt64(st.st_dev)) == device,
            Int64(bitPattern: UInt64(st.st_ino)) == inode
        else { return .failure(Errno(ESTALE)) }
        var generation: UInt32 = 0
        return assetd_file_generation(fd, &generation) == 0 ? .success(Int64(generation)) : .success(nil)
    }
}

/// The put's probe in one openat2 beneath the root (`assetd_probe_beneath`).
enum OpenBeneath {
    /// What it found.
    enum Found {
        /// A regular file, reached without a symlink or a mount on the way.
        case file(FileState)
        /// Nothing at the path.
        case missing
        /// Anything else: the walk folder by folder tells what.
        case walk
    }

    /// Probes `path`, whose first `rootLength` bytes name its root, pinned to `pin`.
    static func probe(_ path: String, rootLength: Int, pin: RootPins.Pin?) -> Found {
        var found = assetd_file_probe()
        let code: Int32
        // withCString: a native string's own bytes (the implicit conversion copied them).
        if let pin {
            var p = assetd_root_pin(
                device: pin.device, inode: pin.inode, has_mount_id: pin.mountID == nil ? 0 : 1,
                mount_id: pin.mountID ?? 0)
            code = path.withCString { assetd_probe_beneath($0, rootLength, &p, &found) }
        } else {
            code = path.withCString { assetd_probe_beneath($0, rootLength, nil, &found) }
        }
        switch code {
        case Int32(ASSETD_PROBE_FILE):
            return .file(
                FileState(
                    FileStatus(found.stat), generation: found.has_generation != 0 ? Int64(found.generation) : nil))
        case Int32(ASSETD_PROBE_MISSING): return .missing
        default: return .walk
        }
    }
}
