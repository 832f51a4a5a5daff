// `policy.min_free` against the file systems of the managed roots (assetd.toml(5), [policy]):
// their sizes are known only once the roots exist, so it is judged at start, --check-config,
// reload and `assetctl --db`, not while the file is parsed.

import Foundation

extension DaemonConfig {
    /// Refuses a `policy.min_free` that the file system of a root could not have free even
    /// when empty: every run would evict everything with a file there and still fall short.
    /// `capacity` gives the bytes of a path's file system an unprivileged writer may use (tests).
    public func checkMinFree(capacity: (String) -> Int64? = DaemonConfig.capacity(of:)) throws(ConfigError) {
        guard let minFree = policy?.minFree, minFree > 0 else { return }
        for root in roots {
            guard let size = capacity(root), minFree >= size else { continue }
            throw ConfigError(
                file: sourcePath ?? "(embedded defaults)", line: minFreeLine, key: "policy.min_free",
                message: "\(minFree) bytes is at least the size of the file system of root \(root)"
                    + " (\(size) bytes usable): it can never be free, and every run would evict everything"
                    + " with a file there; set it well below that, or leave it out"
                    + " (to free some space once, run `assetctl evict --bytes SIZE`)")
        }
    }

    /// The bytes of `path`'s file system an unprivileged writer may use when it is empty; nil if
    /// it cannot be read (a root that does not exist yet).
    public static func capacity(of path: String) -> Int64? {
        var vfs = statvfs()
        guard statvfs(path, &vfs) == 0 else { return nil }
        // Blocks reserved for root never show in f_bavail, which min_free is measured against.
        let reserved = UInt64(vfs.f_bfree) > UInt64(vfs.f_bavail) ? UInt64(vfs.f_bfree) - UInt64(vfs.f_bavail) : 0
        let blocks = UInt64(vfs.f_blocks) > reserved ? UInt64(vfs.f_blocks) - reserved : 0
        return Int64(clamping: blocks.multipliedReportingOverflow(by: UInt64(vfs.f_frsize)).partialValue)
    }
}
