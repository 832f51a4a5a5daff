// Small tmpfs mounts for tests of a full or nearly full disk. Mounting needs CAP_SYS_ADMIN:
// suites ask `Tmpfs.available` and are skipped, saying so, without it.

import Foundation
import Glibc

public enum Tmpfs {
    /// True when this process may mount a tmpfs.
    public static let available: Bool = {
        let dir = NSTemporaryDirectory() + "assetd-tmpfs-probe-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { rmdir(dir) }
        guard Glibc.mount("tmpfs", dir, "tmpfs", 0, "size=1m") == 0 else { return false }
        umount(dir)
        return true
    }()

    /// Mounts a tmpfs of `mib` MiB on `path` (created if missing); false if refused.
    public static func mount(_ path: String, mib: Int) -> Bool {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(mib)m") == 0
    }

    /// Detaches the mount on `path`, even with files still open on it.
    public static func unmount(_ path: String) {
        umount2(path, Int32(MNT_DETACH))
    }

    /// Appends to `path` until its filesystem has no block left.
    public static func fill(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        // Large writes first, then smaller ones for the last partial blocks.
        for chunk in [1 << 20, 4096, 1] {
            let bytes = [UInt8](repeating: 0x5a, count: chunk)
            while write(fd, bytes, chunk) > 0 {}
        }
    }
}
