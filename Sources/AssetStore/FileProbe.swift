// Looks at a file below a managed root without following symlinks: every folder between
// the root and the file is lstat'ed, so a symlinked folder is refused (unsafe_path).

import Glibc

/// What the registry records about a file.
public struct FileState: Sendable, Hashable {
    /// False when nothing is at the path yet (it may be referenced before it exists).
    public var exists: Bool
    /// Size in bytes; 0 when missing.
    public var size: Int64
    /// `st_dev`, when it exists.
    public var device: Int64?
    /// `st_ino`, when it exists.
    public var inode: Int64?
    /// Modification time, Unix seconds.
    public var mtime: Double?

    /// Nothing at the path.
    public static let missing = FileState(exists: false, size: 0, device: nil, inode: nil, mtime: nil)
}

enum FileProbe {
    /// Inspects `path` (normalised, below `root`): a symlinked folder on the way is
    /// `unsafe_path`; an existing non-regular file is `not_a_regular_file`.
    static func probe(path: String, root: String) throws(StoreError) -> FileState {
        var st = stat()
        // Folders strictly between the root and the file.
        var prefix = root
        let below = ManagedRoots.components(of: path, below: root)
        for folder in below.dropLast() {
            prefix += "/" + folder
            if lstat(prefix, &st) != 0 {
                let e = errno
                if e == ENOENT || e == ENOTDIR { return .missing }
                throw StoreError(.permissionDenied, "cannot inspect \(prefix): \(String(cString: strerror(e)))")
            }
            if (st.st_mode & S_IFMT) == S_IFLNK {
                throw StoreError(.unsafePath, "\(prefix) is a symlink", detail: .string(path))
            }
            if (st.st_mode & S_IFMT) != S_IFDIR { return .missing }
        }
        if lstat(path, &st) != 0 {
            let e = errno
            if e == ENOENT || e == ENOTDIR { return .missing }
            throw StoreError(.permissionDenied, "cannot inspect \(path): \(String(cString: strerror(e)))")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw StoreError(.notARegularFile, "\(path) is not a regular file", detail: .string(path))
        }
        return FileState(
            exists: true, size: Int64(st.st_size), device: Int64(bitPattern: UInt64(st.st_dev)),
            inode: Int64(bitPattern: UInt64(st.st_ino)),
            mtime: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
    }

    /// Like `probe`, but never throws: anything unusual reads as missing. Used when recording
    /// the identity of a file that is being queued.
    static func identity(path: String, root: String) -> FileState {
        (try? probe(path: path, root: root)) ?? .missing
    }
}
