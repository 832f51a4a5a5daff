// The filesystems under the managed roots, for `min_free` (assetd.toml(5), [policy]): each distinct
// device once, and its free space as an unprivileged writer sees it (f_bavail).

import Glibc

extension ManagedRoots {
    /// The devices the roots live on, each once, in root order; roots that do not exist are left out.
    public func devices() -> [Int64] {
        var out = [Int64]()
        for p in paths {
            var st = stat()
            guard stat(p, &st) == 0 else { continue }
            let d = Int64(bitPattern: UInt64(st.st_dev))
            if !out.contains(d) { out.append(d) }
        }
        return out
    }

    /// The first root on `device`, if any.
    public func root(onDevice device: Int64) -> String? {
        paths.first { p in
            var st = stat()
            return stat(p, &st) == 0 && Int64(bitPattern: UInt64(st.st_dev)) == device
        }
    }

    /// Free bytes on the filesystem of the first root on `device`, or nil if none can be read.
    public func freeBytes(device: Int64) -> Int64? {
        guard let p = root(onDevice: device) else { return nil }
        var vfs = statvfs()
        guard statvfs(p, &vfs) == 0 else { return nil }
        return Int64(clamping: UInt64(vfs.f_bavail) &* UInt64(vfs.f_frsize))
    }
}
