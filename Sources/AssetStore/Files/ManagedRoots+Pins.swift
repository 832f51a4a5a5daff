// Each root pinned to the folder it named when the store opened (assetd(8), "Managed
// roots"). A root is opened by its path, symlinks followed, at every probe, sweep and orphan
// walk; whoever can write a folder above it could swap it for a symlink to /etc between two
// of them, and the checks beneath the root would then hold beneath /etc. So the folder
// opened must be the pinned one (device, inode, and mount where known), or one at the very
// place the kernel had the pinned one on another mount (a disk mounted on the root, or
// unmounted from it, since); another one is refused, and nothing under it is looked at or
// removed.

import Glibc
import Synchronization

/// What the roots were when the store opened. Shared by every copy of a `ManagedRoots`.
public final class RootPins: Sendable {
    private let pins = Mutex<[String: Pin]>([:])

    struct Pin: Sendable {
        var device: UInt64
        var inode: UInt64
        var mountID: UInt64?
        /// Where the kernel had the folder (/proc/self/fd), not compared by `==`.
        var location: [UInt8]? = nil

        func isFolder(of pin: Pin) -> Bool {
            device == pin.device && inode == pin.inode
                && (mountID == nil || pin.mountID == nil || mountID == pin.mountID)
        }

        func isOnAnotherMount(than pin: Pin) -> Bool {
            if let a = mountID, let b = pin.mountID { return a != b }
            return device != pin.device
        }
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
        if let p = pins.withLock({ $0[root] }) { return p }
        guard case .folder(let fd) = open(root, flags: SafeUnlinker.oPath) else { return nil }
        close(fd)
        return pins.withLock { $0[root] }
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
        let pinned = pins.withLock { pins in
            if let p = pins[root] { return p }
            now.location = RootPins.location(of: fd)
            pins[root] = now
            return now
        }
        if now.isFolder(of: pinned) { return .folder(fd) }
        // Another folder at the same place (where the kernel has it, no symlink on the way
        // changed) on another mount: a mount came or went at the root.
        now.location = RootPins.location(of: fd)
        if now.location != nil, now.location == pinned.location, now.isOnAnotherMount(than: pinned) {
            pins.withLock { $0[root] = now }
            return .folder(fd)
        }
        close(fd)
        return .moved(RootPins.moved(root))
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
