// Looks at a file below a managed root without following symlinks or crossing a mount: the
// file is opened with openat2 beneath the root (no symlink, no mount crossed), and where that
// fails every folder between the root and the file is statx'ed to tell why, so a symlinked
// folder or a mount point below the root (a bind mount of the same filesystem too) is refused
// (unsafe_path).

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
    /// What tells this file from a later one given the same inode number.
    public var stamp: FileStamp = .none

    /// Nothing at the path.
    public static let missing = FileState(exists: false, size: 0, device: nil, inode: nil, mtime: nil)
}

extension FileState {
    /// An existing regular file as statx saw it, with its generation where it could be read.
    init(_ status: FileStatus, generation: Int64?) {
        self.init(
            exists: true, size: status.size, device: status.device, inode: status.inode, mtime: status.mtime,
            stamp: FileStamp(birth: status.birth, generation: generation, ctime: status.ctime))
    }
}

enum FileProbe {
    /// Inspects `path` (normalised, below `root`): a symlinked folder or a mount point on the
    /// way is `unsafe_path`; an existing non-regular file is `not_a_regular_file`. A mount at
    /// one of `roots` (a nested root that is a mount point) is that root's own, not a crossing.
    /// A root that is no longer the folder it was pinned to is `unsafe_path`.
    static func probe(path: String, root: String, roots: ManagedRoots) throws(StoreError) -> FileState {
        // A regular file reached beneath the root in one openat2, the common case: nine system
        // calls however deep the path. Anything else is told apart by the walk.
        switch OpenBeneath.probe(path, rootLength: root.utf8.count, pin: roots.pins.pin(of: root)) {
        case .file(let state): return state
        case .missing: return .missing
        // Anything else, a root that is not its pinned folder too: the walk's open of the root
        // tells a swap (refused) from a disk mounted or unmounted there (pinned again).
        case .walk: return try walk(path: path, root: root, roots: roots)
        }
    }

    /// `probe` folder by folder: statx of the root, of each folder and of the file.
    static func walk(path: String, root: String, roots managed: ManagedRoots) throws(StoreError) -> FileState {
        let roots = managed.paths
        // The root is configuration: its own mount is fine, only crossing below it is not.
        var mount: FileStatus
        switch managed.pins.open(root, flags: SafeUnlinker.oPath) {
        case .folder(let fd):
            defer { close(fd) }
            guard case .success(let st) = FileStatus.of(fd, "") else { return .missing }
            mount = st
        case .moved(let why): throw StoreError(.unsafePath, why, detail: .string(path))
        case .failed: return .missing
        }
        var prefix = root
        let below = ManagedRoots.components(of: path, below: root)
        for folder in below.dropLast() {
            prefix += "/" + folder
            guard let st = try status(prefix) else { return .missing }
            if st.kind == S_IFLNK {
                throw StoreError(.unsafePath, "\(prefix) is a symlink", detail: .string(path))
            }
            if st.kind != S_IFDIR { return .missing }
            if st.onAnotherMount(than: mount) {
                guard roots.contains(where: { $0.utf8.elementsEqual(prefix.utf8) }) else {
                    throw crossing(prefix, path)
                }
                mount = st
            }
        }
        guard let st = try status(path) else { return .missing }
        guard st.kind == S_IFREG else {
            if st.kind == S_IFDIR, st.onAnotherMount(than: mount) { throw crossing(path, path) }
            throw StoreError(.notARegularFile, "\(path) is not a regular file", detail: .string(path))
        }
        // A file bind-mounted over the name is another file system's (or another place's) file.
        if st.onAnotherMount(than: mount) { throw crossing(path, path) }
        // Where the open fails (no read permission) the other fields still tell.
        let generation = try? FileGeneration.read(dirfd: AT_FDCWD, leaf: path, device: st.device, inode: st.inode).get()
        return FileState(st, generation: generation)
    }

    /// statx of `path` (a final symlink not followed); nil when nothing is there.
    private static func status(_ path: String) throws(StoreError) -> FileStatus? {
        switch FileStatus.of(path) {
        case .success(let s): return s
        case .failure(let e):
            if e.code == ENOENT || e.code == ENOTDIR { return nil }
            throw StoreError(.permissionDenied, "cannot inspect \(path): \(String(cString: strerror(e.code)))")
        }
    }

    private static func crossing(_ at: String, _ path: String) -> StoreError {
        StoreError(
            .unsafePath, "\(at) is a mount point below the root: files across it are not managed", detail: .string(path)
        )
    }

    /// Like `probe`, but never throws: anything unusual reads as missing. Used when recording
    /// the identity of a file that is being queued.
    static func identity(path: String, root: String, roots: ManagedRoots) -> FileState {
        (try? probe(path: path, root: root, roots: roots)) ?? .missing
    }
}
