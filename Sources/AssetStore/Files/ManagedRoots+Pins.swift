// Each root pinned to the folder it named when the store opened (assetd(8), "Managed
// roots"). A root is opened by its path, symlinks followed, at every probe, sweep and orphan
// walk; whoever can write a folder above it could swap it for a symlink to /etc between two
// of them, and the checks beneath the root would then hold beneath /etc. So the folder
// opened must be one accepted before (the first is the anchor), or one at the very place the
// kernel had the anchor on a file system not seen there yet (a disk mounted on the root, or
// unmounted from it, since). A folder on a file system seen there must be the folder seen
// on it: else a rename away and a mkdir, then a mount and an unmount, would chain to a
// folder of the attacker's on the anchor's own file system. A FUSE mount (which a user may
// make on a folder they can write) is not accepted unless the anchor was on FUSE.

import Glibc
import Synchronization

/// What the roots were when the store opened. Shared by every copy of a `ManagedRoots`.
public final class RootPins: Sendable {
    /// Per root, the folders accepted there, the anchor (the first) first.
    private let pins = Mutex<[String: [Pin]]>([:])

    struct Pin: Sendable {
        var device: UInt64
        var inode: UInt64
        var mountID: UInt64?
        /// Where the kernel had the folder (/proc/self/fd), not compared by `==`.
        var location: [UInt8]? = nil
        /// Its file system's statfs type (nil: not read, or unreadable).
        var fileSystem: Int64? = nil

        /// On a FUSE file system, which a user may mount on a folder of theirs.
        var onFUSE: Bool { fileSystem == RootPins.fuseMagic }

        func isFolder(of pin: Pin) -> Bool {
            device == pin.device && inode == pin.inode
                && (mountID == nil || pin.mountID == nil || mountID == pin.mountID)
        }

        /// The same folder remounted (same file system, same inode, another mount).
        func isRemount(of pin: Pin) -> Bool { device == pin.device && inode == pin.inode }
    }

    /// What opening a root found.
    enum Opened {
        /// The pinned folder, open (the caller closes it).
        case folder(Int32)
        /// Another folder than the pinned one: nothing under it may be touched.
        case moved(String)
        /// The open (or its statx) failed with this errno.
        case failed(Int32)
    }

    init() {}

    /// Pins every root that can be opened now; one that cannot is pinned when first opened.
    func pinAll(_ roots: [String]) {
        for root in roots {
            if case .folder(let fd) = open(root, flags: SafeUnlinker.oPath) { close(fd) }
        }
    }

    /// The pin of `root`, for `assetd_probe_beneath`; taken now if it was not yet (nil when
    /// the root cannot be opened: the probe finds nothing then).
    func pin(of root: String) -> Pin? {
        if let p = pins.withLock({ $0[root]?.last }) { return p }
        guard case .folder(let fd) = open(root, flags: SafeUnlinker.oPath) else { return nil }
        close(fd)
        return pins.withLock { $0[root]?.last }
    }

    /// Opens `root` (a folder, its path's symlinks followed: it is configuration) with
    /// `flags` and checks it is the pinned folder, or the same place with a file system
    /// mounted on it or unmounted from it since (a disk mounted late, or not yet): that one
    /// is pinned from then on.
    func open(_ root: String, flags: Int32) -> Opened {
        let fd = Glibc.open(root, flags | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return .failed(errno) }
        let s: FileStatus
        switch FileStatus.of(fd, "") {
        case .success(let st): s = st
        case .failure(let e):
            close(fd)
            return .failed(e.code)
        }
        var now = Pin(device: UInt64(bitPattern: s.device), inode: UInt64(bitPattern: s.inode), mountID: s.mountID)
        if pins.withLock({ $0[root] == nil }) {
            // Read before the lock: a statfs of a FUSE root may wait on its daemon.
            now.location = RootPins.location(of: fd)
            now.fileSystem = RootPins.fileSystem(fd)
        }
        let accepted = pins.withLock { pins in
            if let seen = pins[root] { return seen }
            pins[root] = [now]
            return [now]
        }
        if let i = accepted.lastIndex(where: { now.isFolder(of: $0) }) {
            // The current pin is what the probe compares against: make it this one.
            if i != accepted.count - 1 { pins.withLock { RootPins.accept(accepted[i], at: root, in: &$0) } }
            return .folder(fd)
        }
        now.location = RootPins.location(of: fd)
        now.fileSystem = RootPins.fileSystem(fd)
        if RootPins.admits(now, after: accepted) {
            pins.withLock { RootPins.accept(now, at: root, in: &$0) }
            return .folder(fd)
        }
        close(fd)
        return .moved(RootPins.moved(root))
    }

    /// Whether `now`, a folder none of `accepted` is, may stand for the root: at the very place
    /// the kernel had the anchor, not a FUSE mount over a non-FUSE anchor, and the same folder
    /// remounted or on a file system and mount not seen here yet (a mount came or went at the
    /// root). Another folder on a file system or mount seen here is a replacement: a btrfs
    /// subvolume made in place has a device of its own, but not a mount of its own.
    static func admits(_ now: Pin, after accepted: [Pin]) -> Bool {
        let anchor = accepted[0]
        guard now.location != nil, now.location == anchor.location, !now.onFUSE || anchor.onFUSE else { return false }
        let seenHere = accepted.contains { $0.device == now.device || ($0.mountID != nil && $0.mountID == now.mountID) }
        return !seenHere || accepted.contains(where: { now.isRemount(of: $0) })
    }

    /// Folders kept per root at most, the anchor included: mounts that come and go (an
    /// automount) must not grow the list for ever.
    static let maxPins = 32

    /// Makes `pin` the current one at `root`: moved to the end if accepted before (one entry
    /// per folder), the oldest after the anchor dropped past `maxPins`.
    static func accept(_ pin: Pin, at root: String, in pins: inout [String: [Pin]]) {
        guard var list = pins[root] else { return }
        if let i = list.indices.dropFirst().first(where: { list[$0].isFolder(of: pin) && pin.isFolder(of: list[$0]) }) {
            list.remove(at: i)
        }
        list.append(pin)
        if list.count > maxPins { list.remove(at: 1) }
        pins[root] = list
    }

    /// FUSE's statfs type ("FUSE" in ASCII).
    static let fuseMagic: Int64 = 0x6573_5546

    private static func fileSystem(_ fd: Int32) -> Int64? { fileSystemType(of: "/proc/self/fd/\(fd)") }

    /// Of `roots`, those on a file system whose names another host may change behind the
    /// kernel's cache (`isNetwork`), or whose file system is not known yet (not pinned: it
    /// could not be opened; looked at afresh, which costs only a request more).
    func onNetwork(_ roots: [String]) -> Set<String> {
        pins.withLock { pins in
            Set(roots.filter { root in pins[root]?.last.map { RootPins.isNetwork($0.fileSystem) } ?? true })
        }
    }

    /// Network file systems by statfs type, where a fresh look can tell a name renamed over:
    /// NFS, SMB (smb, cifs, smb2), Ceph, AFS (OpenAFS, kAFS). Their clients cache a name's inode
    /// and attributes for seconds, and a host elsewhere may rename a file over the name
    /// meanwhile; asked afresh, their servers give the inode number the file has. Not FUSE nor
    /// 9p (docs/DESIGN.md): a folder's GETATTR does not drop their cached names, and a
    /// path-based FUSE server (sshfs, s3fs) answers for whatever the path names now with the
    /// old inode number, so the look would catch nothing there and only cost requests. Nor
    /// cluster file systems whose caches a lock manager keeps coherent (OCFS2, GFS2, Lustre,
    /// GPFS), nor any type not listed: the kernel's cache is its own.
    static let networkTypes: Set<Int64> = [
        0x6969, 0x517B, 0xFF53_4D42, 0xFE53_4D42, 0x00C3_6400, 0x5346_414F, 0x6B41_4653,
    ]

    /// Whether a root on a file system of statfs type `type` is looked at afresh before an
    /// unlink (nil: unknown, so yes).
    static func isNetwork(_ type: Int64?) -> Bool { type.map { networkTypes.contains($0) } ?? true }

    /// Fresh looks taken below these roots (SafeUnlinker.lookAfresh; tests).
    let freshLooks = Atomic<Int>(0)

    /// Tests: takes the current pin of `root` for one on a file system of `type`.
    func setFileSystem(_ type: Int64?, of root: String) {
        pins.withLock { pins in
            guard var list = pins[root], !list.isEmpty else { return }
            list[list.count - 1].fileSystem = type
            pins[root] = list
        }
    }

    /// The path the kernel has for an open folder (/proc/self/fd), or nil without /proc.
    private static func location(of fd: Int32) -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count)
        guard n > 0, n < buffer.count else { return nil }
        return buffer[..<n].map { UInt8(bitPattern: $0) }
    }

    /// Why a root that is no longer its pinned folder is refused.
    static func moved(_ root: String) -> String {
        "the root \(root) is not the folder it was when assetd started (replaced, or a symlink on the way "
            + "changed): nothing under it is looked at or removed while it is not"
    }
}
