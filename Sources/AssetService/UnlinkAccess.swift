// Whether a client could unlink a file itself, for control.enforce_ownership: a non-admin may
// name an existing file (register it, or reference one registered) only if so, since the
// daemon, running as root, may later unlink it for that client's rules. Unix rules: write and
// search permission on the parent folder (owner, then group, then other bits, as the kernel
// picks them), and in a sticky folder owning the file or the folder. ACLs and capabilities
// are not consulted: a client they alone let in is refused, never the other way round.

import Foundation

public enum UnlinkAccess {
    /// Nil if `uid`, with the groups `gids`, could unlink `path` itself or nothing is at
    /// `path`; else why not.
    public static func refusal(_ path: String, uid: UInt32, gids: [UInt32]) -> String? {
        var file = stat()
        if lstat(path, &file) != 0 {
            // Nothing there yet: whatever comes later is reached by the daemon's own checks.
            return errno == ENOENT ? nil : "\(path) cannot be checked (\(String(cString: strerror(errno))))"
        }
        let parentPath = (path as NSString).deletingLastPathComponent
        var parent = stat()
        guard stat(parentPath, &parent) == 0 else {
            return "\(parentPath) cannot be checked (\(String(cString: strerror(errno))))"
        }
        let bits: mode_t =
            parent.st_uid == uid
            ? parent.st_mode >> 6 : gids.contains(parent.st_gid) ? parent.st_mode >> 3 : parent.st_mode
        guard bits & 0o3 == 0o3 else { return "uid \(uid) may not remove files from \(parentPath)" }
        if parent.st_mode & S_ISVTX != 0 && file.st_uid != uid && parent.st_uid != uid {
            return "uid \(uid) may not remove \(path) from the sticky folder \(parentPath)"
        }
        return nil
    }
}
