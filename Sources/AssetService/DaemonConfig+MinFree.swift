// `policy.min_free` against the file systems of the managed roots (assetd.toml(5), [policy]):
// their sizes are known only once the roots exist, so it is judged at start, --check-config,
// reload and `assetctl --db enforce`, not while the file is parsed.

import Foundation

/// The size of a file system, in bytes (statvfs).
public struct FileSystemSize: Sendable, Equatable {
    /// Every block (`f_blocks`): no free space can be larger.
    public var total: Int64
    /// What an unprivileged writer could have free when it is empty: `total` less the blocks
    /// reserved for root, which `f_bavail` (what min_free is measured against) never shows.
    public var usable: Int64

    public init(total: Int64, usable: Int64) {
        self.total = total
        self.usable = usable
    }
}

extension DaemonConfig {
    /// Refuses a `policy.min_free` larger than the whole file system of a root: a unit slip
    /// ("5TB" for "5GB"), which no run could meet (it would cap the floor at the space free). One at or
    /// above what an unprivileged writer could have free is only warned of (appended to
    /// `policyWarnings`): that size moves (ZFS shrinks a dataset's `f_blocks` as its siblings
    /// fill, btrfs moves `f_bavail`), and refusing it would stop a working daemon at a restart.
    /// `size` gives a path's file system (tests).
    public mutating func checkMinFree(
        size: (String) -> FileSystemSize? = DaemonConfig.fileSystemSize(of:)
    ) throws(ConfigError) {
        guard let minFree = policy?.minFree, minFree > 0 else { return }
        for root in roots {
            guard let fs = size(root) else { continue }
            if minFree > fs.total {
                throw ConfigError(
                    file: sourcePath ?? "(embedded defaults)", line: minFreeLine, key: "policy.min_free",
                    message: "remove min_free for no floor, or check its unit (\"5GiB\", not \"5TiB\"):"
                        + " \(minFree) bytes is more than the whole file system of root \(root)"
                        + " (\(fs.total) bytes) and can never be free;"
                        + " to free some space once on purpose, run `assetctl evict --bytes SIZE`")
            }
            if minFree >= fs.usable {
                let warning = ConfigError(
                    file: sourcePath ?? "(embedded defaults)", line: minFreeLine, key: "policy.min_free",
                    message: "remove min_free for no floor, or set it well below \(fs.usable) bytes:"
                        + " \(minFree) bytes is at least what the file system of root \(root) could have free,"
                        + " so it can never be met: a run caps it at the space free when it finds that")
                policyWarnings.append(warning.description)
            }
        }
    }

    /// The size of `path`'s file system, or of its nearest existing parent's for a path not
    /// created yet (a root made at start); nil if none can be read.
    public static func fileSystemSize(of path: String) -> FileSystemSize? {
        var vfs = statvfs()
        var p = URL(fileURLWithPath: path).standardizedFileURL.path
        while statvfs(p, &vfs) != 0 {
            guard errno == ENOENT, p != "/" else { return nil }
            p = URL(fileURLWithPath: p).deletingLastPathComponent().path
        }
        let reserved = UInt64(vfs.f_bfree) > UInt64(vfs.f_bavail) ? UInt64(vfs.f_bfree) - UInt64(vfs.f_bavail) : 0
        let blocks = UInt64(vfs.f_blocks)
        let frsize = UInt64(vfs.f_frsize)
        return FileSystemSize(
            total: bytes(blocks: blocks, blockSize: frsize),
            usable: bytes(blocks: blocks > reserved ? blocks - reserved : 0, blockSize: frsize))
    }

    /// `blocks * blockSize`, or Int64.max past it: a wrapped product would read as a small
    /// disk and refuse any min_free.
    static func bytes(blocks: UInt64, blockSize: UInt64) -> Int64 {
        let (b, overflow) = blocks.multipliedReportingOverflow(by: blockSize)
        return overflow ? .max : Int64(clamping: b)
    }
}
