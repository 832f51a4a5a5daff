// A root assetd can only read: a read-only mount, or under the systemd unit a root that
// ProtectSystem=strict leaves out of ReadWritePaths. Warned of at start and on SIGHUP, not
// refused: a read-only root can be meant, and a remount needs no restart (docs/DESIGN.md,
// Roots; assetd(8), Managed roots).

import Foundation

extension DaemonConfig {
    /// A warning for each root on a read-only file system or mount (statvfs's ST_RDONLY):
    /// files there register and read, but every unlink fails EROFS and stays queued.
    public func readOnlyRootWarnings() -> [String] {
        roots.compactMap { root in
            var vfs = statvfs()
            guard statvfs(root, &vfs) == 0, vfs.f_flag & UInt(ST_RDONLY) != 0 else { return nil }
            return "root \(root) is on a read-only file system or mount: files there can be registered"
                + " but none unlinked (each unlink fails EROFS and stays queued: assetctl pending);"
                + " under the systemd unit, add the root to ReadWritePaths= (systemctl edit assetd)"
                + " and restart"
        }
    }
}
