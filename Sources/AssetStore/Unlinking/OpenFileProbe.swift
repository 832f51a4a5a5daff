// The open-file check of `files.skip_open` (assetd.toml(5), [files]): just before an unlink,
// decides whether any process has the queued file open; if none has, a write lease is held across
// the unlinkat so no open can complete in between. Advisory, never a reason to unlink: every doubt
// keeps the file. Limits (leases, /proc, namespaces) are listed on `OpenFileProbe`.

import Glibc
import Synchronization

/// What the open check decided about one queued file.
enum OpenCheck {
    /// Nobody has it open. `leaseFD` holds a write lease (unlink, then `OpenFileProbe.end`),
    /// or is -1 when /proc decided (no lease: racy).
    case clear(leaseFD: Int32)
    /// Some process has it open (or mapped, or holds a lease on it): keep it.
    case open
    /// Neither a lease nor /proc could tell: kept, and why.
    case undetermined(String)
    /// The probe found the path changed, gone or failing: this is the unlink's outcome.
    case outcome(UnlinkOutcome)
}

/// Decides whether a queued file is open anywhere, for one sweep batch. Thread-safe: the
/// batch's unlink threads share one probe, and so one /proc pass.
///
/// **Mechanism.** The file is opened again from the unlinker's `O_PATH` descriptor of it
/// through /proc/self/fd (without /proc, by name relative to its folder with `O_NOFOLLOW`;
/// `O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC`, plus `O_NOATIME` when permitted), `fstat`ed
/// and compared with the queued regular file (device, inode), then `fcntl(F_SETLEASE,
/// F_WRLCK)` is asked for: the kernel grants a write lease only when no other open file
/// description of the inode exists, in any process — read-only opens, opens through another
/// hard link, a child's inherited descriptor, and a mapping whose
/// descriptor was closed (the mapping keeps its file open) all refuse it with `EAGAIN`. An
/// `O_PATH` descriptor does not count (it cannot read or write). While the lease is held, a
/// racing `open` blocks in the kernel until the lease is dropped right after the unlinkat,
/// and then opens the unlinked file — so at the moment of the unlink nobody had it open.
///
/// **Limits.**
/// - Leases need the caller to own the file or hold `CAP_LEASE`, `fs.leases-enable = 1`, and
///   a filesystem that supports them (not NFS, not most FUSE). Otherwise (`EPERM`, `EACCES`,
///   `EINVAL`, `ENOLCK`, or the file cannot be opened for reading) every `/proc/PID/fd/N` is
///   `stat`ed and every `/proc/PID/maps` read, comparing device and inode (a link's text is
///   not compared: it can be stale or ambiguous). That fallback holds no lease, so an open
///   racing the unlink is missed; it cannot see processes in other PID namespaces, threads
///   with their own descriptor table, or files mapped on filesystems whose maps report
///   another device (btrfs subvolumes); and when some process's `/proc` entries cannot be
///   read (another user's, without `CAP_SYS_PTRACE`) it cannot know, so the file is kept
///   (`undetermined`) and retried — an unprivileged daemon on such a filesystem never
///   removes files whose owner it is not. Run it as the files' owner or with `CAP_LEASE`.
/// - The probe opens the file, which a security module may audit and which updates nothing
///   on disk (`O_NOATIME`, or `relatime` otherwise). A file swapped for a device node
///   between the `fstatat` and the open would be opened (without blocking): only someone who
///   can create device nodes below the root can arrange that.
/// - A lease break would signal this process: the probe directs it to `SIGURG` (ignored by
///   default) and clears the descriptor's owner as soon as the lease is granted.
/// - Cost: one open, fstat, four fcntl and a close per file, about 10 µs (printed by
///   DeferredUnlinkTests' cost test); the /proc fallback reads all of /proc once per batch
///   (about 20–40 ms with 450 open files). Without `files.skip_open` none of this runs.
final class OpenFileProbe: Sendable {
    // Linux fcntl commands (uapi fcntl.h), not all exported by the Glibc module.
    private static let setLease: Int32 = 1024  // F_SETLEASE
    private static let setSignal: Int32 = 10  // F_SETSIG
    private static let setOwner: Int32 = 8  // F_SETOWN
    private static let noAccessTime: Int32 = 0o1000000  // O_NOATIME
    // Read at most once per probe, by the first thread that needs it (the others wait for it).
    private let scan = Mutex<ProcScan?>(nil)
    private let useLeases: Bool
    /// Tests: the /proc pass in place of `ProcScan.read` (one that changes the path meanwhile).
    private let readProc: (@Sendable () -> ProcScan)?

    /// A probe for one batch; without `useLeases` it asks /proc only (tests use that to reach
    /// the fallback, which root's `CAP_LEASE` otherwise never needs).
    init(useLeases: Bool = true, readProc: (@Sendable () -> ProcScan)? = nil) {
        self.useLeases = useLeases
        self.readProc = readProc
    }

    /// Checks the regular file (`device`, `inode`) the O_PATH descriptor `pathFD` names, its
    /// mount already checked: that very inode is opened again through /proc/self/fd, so a
    /// mount made over its name since is asked nothing (a FUSE server need never answer:
    /// assetd(8), "The unlink queue"). Without /proc, `leaf` in `dirfd` is opened by name.
    /// `pathFD` is closed (and set to -1) before a lease is asked: see `decide`.
    func check(pathFD: inout Int32, dirfd: Int32, leaf: String, device: Int64, inode: Int64) -> OpenCheck {
        let fd = reopen(pathFD: pathFD, flags: OpenFileProbe.flags & ~O_NOFOLLOW)
        if fd < 0 {
            let e = errno
            if e == ENOSYS { return byName(dirfd: dirfd, leaf: leaf, device: device, inode: inode, closing: &pathFD) }
            if e == EWOULDBLOCK { return .open }  // someone else holds a lease: they have it open
            return fromProc(device: device, inode: inode, because: "open: \(errnoDescription(e))")
        }
        return decide(fd, device: device, inode: inode, closing: &pathFD)
    }

    private static let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC

    /// Checks `leaf` in the open folder `dirfd`, which must be the regular file (`device`, `inode`).
    func check(dirfd: Int32, leaf: String, device: Int64, inode: Int64) -> OpenCheck {
        var none: Int32 = -1
        return byName(dirfd: dirfd, leaf: leaf, device: device, inode: inode, closing: &none)
    }

    private func byName(
        dirfd: Int32, leaf: String, device: Int64, inode: Int64, closing other: inout Int32
    ) -> OpenCheck {
        let flags = OpenFileProbe.flags
        var fd = openat(dirfd, leaf, flags | OpenFileProbe.noAccessTime)
        // O_NOATIME needs ownership or CAP_FOWNER.
        if fd < 0 && errno == EPERM { fd = openat(dirfd, leaf, flags) }
        if fd < 0 {
            let e = errno
            switch e {
            case ENOENT, ENOTDIR: return .outcome(.alreadyGone)
            case ELOOP: return .outcome(.unsafePath)  // a symlink took its place since the fstatat
            case EWOULDBLOCK: return .open  // someone else holds a lease: they have it open
            default: return fromProc(device: device, inode: inode, because: "open: \(errnoDescription(e))")
            }
        }
        return decide(fd, device: device, inode: inode, closing: &other)
    }

    /// The rest of `check` on the file opened as `fd` (taken over: kept as the lease's, or
    /// closed). `other`, another descriptor of the file (the unlinker's O_PATH one), is closed
    /// before the lease is asked: before Linux 5.3 any other reference to the file's dentry
    /// refuses a write lease, so every file would read as open.
    private func decide(_ fd: Int32, device: Int64, inode: Int64, closing other: inout Int32) -> OpenCheck {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            return .outcome(.failed(errno: e, call: "fstat"))
        }
        guard (st.st_mode & S_IFMT) == S_IFREG, Int64(bitPattern: UInt64(st.st_dev)) == device,
            Int64(bitPattern: UInt64(st.st_ino)) == inode
        else {
            close(fd)
            return .outcome(.identityChanged)
        }
        guard useLeases else {
            close(fd)
            return fromProc(device: device, inode: inode, because: "leases not used")
        }
        if other >= 0 { close(other) }
        other = -1
        _ = fcntl(fd, OpenFileProbe.setSignal, SIGURG)
        if fcntl(fd, OpenFileProbe.setLease, Int32(F_WRLCK)) == 0 {
            _ = fcntl(fd, OpenFileProbe.setOwner, 0)
            return .clear(leaseFD: fd)
        }
        let e = errno
        // Closed before /proc is read: our own descriptor would count as an open.
        close(fd)
        if e == EAGAIN { return .open }
        return fromProc(device: device, inode: inode, because: "F_SETLEASE: \(errnoDescription(e))")
    }

    /// Drops the lease `check` returned and closes its descriptor.
    func end(_ leaseFD: Int32) {
        guard leaseFD >= 0 else { return }
        _ = fcntl(leaseFD, OpenFileProbe.setLease, Int32(F_UNLCK))
        close(leaseFD)
    }

    private func fromProc(device: Int64, inode: Int64, because: String) -> OpenCheck {
        let s = scan.withLock { scan in
            if scan == nil { scan = readProc?() ?? ProcScan.read() }
            return scan!  // set just above
        }
        if s.files.contains(FileID(device: device, inode: inode)) { return .open }
        if let problem = s.problem { return .undetermined("\(because); \(problem)") }
        return .clear(leaseFD: -1)
    }
}

/// A file's identity.
struct FileID: Hashable {
    var device: Int64
    var inode: Int64
}

/// Every file any visible process has open or mapped, from one pass over /proc.
struct ProcScan {
    /// Open or mapped files.
    var files = Set<FileID>()
    /// The first reason the pass is incomplete (an entry it could not read), if any.
    var problem: String?

    /// Reads /proc now.
    static func read() -> ProcScan {
        var scan = ProcScan()
        // Processes /proc does not list cannot be seen to have a file open (ProtectProc=).
        scan.problem = hiding(mountinfo: contents("/proc/self/mountinfo"), status: contents("/proc/self/status"))
        guard let proc = opendir("/proc") else {
            scan.problem = "cannot read /proc: \(errnoDescription(errno))"
            return scan
        }
        defer { closedir(proc) }
        // Our pid as this /proc numbers it (getpid() is another process's number in a /proc
        // of an ancestor pid namespace).
        let own = ProcScan.ownPID()
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)  // d_name is NUL-terminated
            }
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { continue }
            scan.addDescriptors(of: name, own: name == own)
            scan.addMappings(of: name)
        }
        return scan
    }

    /// Why /proc, as `mountinfo` and `status` (this process's) say, hides other users'
    /// processes from this one: mounted with `hidepid=2`, `invisible` or `ptraceable` (4), and
    /// no `CAP_SYS_PTRACE` to see past it. Nil when it lists them all as far as these tell.
    static func hiding(mountinfo: String?, status: String?) -> String? {
        guard let mountinfo else { return "cannot read /proc/self/mountinfo" }
        // The last mount at /proc is the one seen; its options follow the " - " separator.
        let proc = mountinfo.split(separator: "\n").last { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && fields[4] == "/proc"
        }
        guard let proc, let dash = proc.range(of: " - ") else { return nil }
        let after = proc[dash.upperBound...].split(separator: " ")
        guard after.count >= 3, after[0] == "proc" else { return nil }
        guard
            let hidepid = after[2].split(separator: ",").first(where: { $0.hasPrefix("hidepid=") }),
            ["hidepid=2", "hidepid=invisible", "hidepid=4", "hidepid=ptraceable"].contains(String(hidepid))
        else { return nil }
        let ptrace: UInt64 = 1 << 19  // CAP_SYS_PTRACE
        let effective = status?.split(separator: "\n").first { $0.hasPrefix("CapEff:") }
            .flatMap { UInt64(String($0.dropFirst("CapEff:".count).filter { !$0.isWhitespace }), radix: 16) }
        if let effective, effective & ptrace != 0 { return nil }
        return "/proc is mounted with \(hidepid): other users' processes are not listed"
    }

    private static func contents(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? String(decoding: out, as: UTF8.self) : nil }
            out += buffer[..<n]
        }
    }

    private mutating func note(_ what: String, _ e: Int32) {
        // A process that exited while we looked has nothing open.
        guard e != ENOENT && e != ESRCH else { return }
        if problem == nil { problem = "cannot read \(what): \(errnoDescription(e))" }
    }

    /// This process's directory name in /proc (readlink of /proc/self), or nil.
    static func ownPID() -> String? {
        var buffer = [CChar](repeating: 0, count: 32)
        let n = readlink("/proc/self", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when this process's descriptor `name` is O_PATH: one fcntl, the table being ours.
    private static func pathOnly(_ name: String) -> Bool {
        guard let fd = Int32(name) else { return false }
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && flags & SafeUnlinker.oPath != 0
    }

    private mutating func addDescriptors(of pid: String, own: Bool) {
        let folder = "/proc/\(pid)/fd"
        guard let dir = opendir(folder) else { return note(folder, errno) }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)  // d_name is NUL-terminated
            }
            guard name != ".", name != ".." else { continue }
            // The unlinker's own O_PATH descriptor of the file it checks opens nothing, as a
            // lease sees it (other processes' are counted: telling them apart costs a read each).
            if own, ProcScan.pathOnly(name) { continue }
            // Following the magic link to the open file itself, whatever its name now; from the
            // kernel's cache, as only its device and inode are wanted: a file on a FUSE mount
            // anywhere is asked nothing (its server need never answer, holding the sweep).
            switch FileStatus.cached(AT_FDCWD, folder + "/" + name, following: true) {
            case .success(let st): files.insert(FileID(device: st.device, inode: st.inode))
            case .failure(let e): note(folder + "/" + name, e.code)
            }
        }
    }

    private mutating func addMappings(of pid: String) {
        let path = "/proc/\(pid)/maps"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return note(path, errno) }
        defer { close(fd) }
        var text = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { return note(path, errno) }
            if n == 0 { break }
            text.append(contentsOf: buffer[..<n])
        }
        // "start-end perms offset major:minor inode path": fields 4 and 5.
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, let inode = Int64(String(decoding: fields[4], as: UTF8.self)), inode != 0 else {
                continue
            }
            let dev = fields[3].split(separator: UInt8(ascii: ":"))
            guard dev.count == 2, let major = UInt64(String(decoding: dev[0], as: UTF8.self), radix: 16),
                let minor = UInt64(String(decoding: dev[1], as: UTF8.self), radix: 16)
            else { continue }
            // glibc's makedev.
            let device =
                ((major & 0xffff_f000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffff_ff00) << 12) | (minor & 0xff)
            files.insert(FileID(device: Int64(bitPattern: device), inode: inode))
        }
    }
}
