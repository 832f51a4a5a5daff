// Looks at a file below a managed root without following symlinks or crossing a mount: the
// file is opened with openat2 beneath the root (no symlink, no mount crossed), and where that
// fails every name between the root and the file is opened O_PATH from the one above and
// statx'ed to tell why, so a symlinked folder or a mount point below the root (a bind mount
// of the same filesystem too) is refused (unsafe_path). That statx answers from the kernel's
// cache first: nothing is asked of another mount, whose FUSE server need never answer.

import Glibc
import Synchronization

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
    /// Set by a probe with a check: whom it judged for, and on what.
    public var judgement: FileJudgement?

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
    /// A root that is no longer the folder it was pinned to is `unsafe_path`. With `check`,
    /// the walk judges the folder and file it opens, and a refusal is `permission_denied`.
    /// With `latestChange` (`OwedLook`), a file or folder below the root changed later (its
    /// ctime), or on a filesystem whose times may be another clock's, is `unsafe_path`.
    /// With `look` (a deleted file's look, `RegisteredFile.identify`), a root that cannot be
    /// inspected is an error (its errno kept), not a missing file. `beforeWalk` runs (and may
    /// refuse) before an unchecked look that `openat2` could not answer is walked folder by
    /// folder: the caller charges the walk's cost (WriteTransaction+HeldFiles.swift).
    static func probe(
        path: String, root: String, roots: ManagedRoots, check: FileReferenceCheck? = nil,
        latestChange: Int64? = nil, look: Bool = false, rootIs: ((FileStatus) -> Bool)? = nil,
        beforeWalk: (() throws(StoreError) -> Void)? = nil
    ) throws(StoreError) -> FileState {
        stepped(root, root)
        // Checked on the walk's descriptors: the openat2 below opens no folder to judge.
        if check != nil || latestChange != nil || rootIs != nil {
            return try walk(
                path: path, root: root, roots: roots, check: check, latestChange: latestChange, look: look,
                rootIs: rootIs)
        }
        // A test failing the walk's looks takes the walk.
        if anyStepHook.load(ordering: .relaxed), lookFailures.withLock({ $0[root] != nil }) {
            try beforeWalk?()
            return try walk(path: path, root: root, roots: roots, look: look)
        }
        // A regular file reached beneath the root in one openat2, the common case: nine system
        // calls however deep the path. Anything else is told apart by the walk.
        switch OpenBeneath.probe(path, rootLength: root.utf8.count, pin: roots.pins.pin(of: root)) {
        case .file(let state): return state
        case .missing: return .missing
        // Anything else, a root that is not its pinned folder too: the walk's open of the root
        // tells a swap (refused) from a disk mounted or unmounted there (pinned again).
        // A client can force it (a symlink or a mount as the last name): charged first.
        case .walk:
            try beforeWalk?()
            return try walk(path: path, root: root, roots: roots, look: look)
        }
    }

    /// `probe` folder by folder on descriptors: the root opened (and checked against its pin),
    /// then each name opened O_PATH without following a symlink relative to the folder above
    /// and statx-ed through its descriptor; the file's generation is read through
    /// /proc/self/fd from that very descriptor. Nothing is looked up by path, so a folder
    /// swapped for a symlink between two steps is never followed, and nothing but the regular
    /// file statx saw is ever opened to read (never a FIFO or a device).
    static func walk(
        path: String, root: String, roots managed: ManagedRoots, check: FileReferenceCheck? = nil,
        latestChange: Int64? = nil, look: Bool = false, rootIs: ((FileStatus) -> Bool)? = nil
    ) throws(StoreError) -> FileState {
        var fd: Int32
        switch managed.pins.open(root, flags: SafeUnlinker.oPath) {
        case .folder(let opened): fd = opened
        case .moved(let why): throw StoreError(.unsafePath, why, detail: .string(path))
        case .failed(let e):
            // A root that cannot be opened for another reason than its absence (EMFILE, EIO,
            // EACCES) says nothing about the file.
            if e == ENOENT, check == nil { return .missing }
            throw StoreError(.permissionDenied, "cannot open the root \(root): \(String(cString: strerror(e)))")
                .failing(e)
        }
        defer { close(fd) }
        // The root is configuration: its own mount is fine, only crossing below it is not.
        // One that cannot be inspected says nothing about the file (EIO, ENOMEM): a deleted
        // file's look owes it then; a put or an edge registers the file missing, as ever.
        var mount: FileStatus
        let failing = Self.injected(root, root)
        switch failing == 0 ? FileStatus.of(fd, "") : .failure(Errno(failing)) {
        case .success(let s): mount = s
        case .failure where check == nil && !look: return .missing
        case .failure(let e):
            throw StoreError(.permissionDenied, "cannot inspect the root \(root): \(String(cString: strerror(e.code)))")
                .failing(e.code)
        }
        // With `rootIs` (a look owed, OwedLook.swift): the folder this walk opened, not only
        // the one a check before it saw, is the root's as it was; a disk mounted or unmounted
        // there in between would have the walk take a stale file of the same name.
        if let rootIs, !rootIs(mount) {
            throw StoreError(
                .unsafePath, "the root \(root) is not the folder it was when the look was owed", detail: .string(path))
        }
        var prefix = root
        // With `check`: the folder `fd` is, as fstat saw it (the judge's owner and mode bits),
        // and every folder so far, for the judge and for a claim on a file not there yet.
        var folder: Judged?
        var folders = [FolderSeen]()
        var seen = mount  // statx of `fd`
        let below = ManagedRoots.components(of: path, below: root)
        for (i, name) in below.enumerated() {
            if check != nil {
                let judged = try Self.status(fd, prefix, path, folder: true)
                folder = judged
                let st = judged.status
                folders.append(
                    FolderSeen(
                        device: seen.device, inode: seen.inode, owner: st.st_uid, group: st.st_gid,
                        mode: UInt32(st.st_mode), hasACL: judged.acl, birth: seen.birth))
            }
            prefix += "/" + name
            let next = openat(fd, name, SafeUnlinker.oPath | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 || Self.failsOpen(root, prefix, next) {
                let e = next < 0 ? errno : Self.injected(root, prefix)
                if e == ENOENT || e == ENOTDIR {
                    // Nothing there yet: judged on the nearest folder that exists.
                    return try missing(check, path, folder, folders)
                }
                throw StoreError(.permissionDenied, "cannot inspect \(prefix): \(String(cString: strerror(e)))")
                    .failing(e)
            }
            close(fd)
            fd = next
            // Which mount the name is on, from the kernel's cache: another filesystem mounted
            // here is refused before anything asks it (a FUSE server need never answer a
            // statx, and the writer would wait for ever: assetd(8), "The unlink queue").
            var st: FileStatus
            switch FileStatus.cached(fd, "") {
            case .success(let s): st = s
            case .failure(let e):
                throw StoreError(.permissionDenied, "cannot inspect \(prefix): \(String(cString: strerror(e.code)))")
                    .failing(e.code)
            }
            FileProbe.stepped(root, prefix)
            let last = i == below.count - 1
            if st.onAnotherMount(than: mount) {
                // A folder that is a configured root (a nested one, a mount point itself) is
                // that root's own; a file or folder mounted over any other name is not ours.
                if !last, st.kind == S_IFDIR, managed.paths.contains(where: { $0.utf8.elementsEqual(prefix.utf8) }) {
                    mount = st
                } else if st.kind == S_IFDIR || (last && st.kind == S_IFREG) {
                    throw crossing(last ? path : prefix, path)
                } else if last {
                    throw StoreError(.notARegularFile, "\(path) is not a regular file", detail: .string(path))
                } else {
                    if st.kind == S_IFLNK {
                        throw StoreError(.unsafePath, "\(prefix) is a symlink", detail: .string(path))
                    }
                    return try missing(check, path, folder, folders)
                }
            }
            // On the root's mount (or a nested root's) now: its own filesystem is asked afresh
            // where size and times matter, the file's, and a folder's ctime for a late look.
            if latestChange != nil || (last && st.kind == S_IFREG) {
                switch FileStatus.of(fd, "") {
                case .success(let s): st = s
                case .failure(let e):
                    throw StoreError(
                        .permissionDenied, "cannot inspect \(prefix): \(String(cString: strerror(e.code)))"
                    ).failing(e.code)
                }
            }
            seen = st
            if let latestChange, st.ctime > latestChange {
                throw StoreError(.unsafePath, "\(prefix) changed after its look was owed", detail: .string(path))
            }
            if last {
                guard st.kind == S_IFREG else {
                    throw StoreError(.notARegularFile, "\(path) is not a regular file", detail: .string(path))
                }
                if latestChange != nil, Self.foreignTimes(root) || !OwedLook.keepsLocalTimes(fd) {
                    throw StoreError(.unsafePath, "\(path): its times may be another clock's", detail: .string(path))
                }
                var state = FileState(st, generation: nil)
                if let check {
                    try judge(
                        check, path, folder, folders, file: Self.status(fd, prefix, path, folder: false).status)
                    state.judgement = FileJudgement(uid: check.uid, owner: check.owner, folder: folders.last)
                }
                // The inode statx saw, opened again through /proc: where it cannot be (no read
                // permission, no /proc) the other fields still tell.
                state.stamp.generation = try? FileGeneration.read(pathFD: fd).get()
                return state
            }
            if st.kind == S_IFLNK { throw StoreError(.unsafePath, "\(prefix) is a symlink", detail: .string(path)) }
            if st.kind != S_IFDIR { return try missing(check, path, folder, folders) }
        }
        return .missing  // no name below the root: not a file path
    }

    /// A folder or file the walk holds, by its path and as fstat saw it, and whether it
    /// has an access ACL.
    typealias Judged = (path: String, status: stat, acl: Bool)

    /// fstat of the walk's descriptor `fd` (at `at`), for `check`; for a folder, whether it
    /// has an access ACL too.
    private static func status(
        _ fd: Int32, _ at: String, _ path: String, folder: Bool
    ) throws(StoreError) -> Judged {
        var s = stat()
        guard fstat(fd, &s) == 0 else {
            let e = errno
            throw StoreError(
                .permissionDenied, "cannot inspect \(at): \(String(cString: strerror(e)))", detail: .string(path)
            ).failing(e)
        }
        guard folder else { return (at, s, false) }
        // Read through /proc, as the descriptor is O_PATH; one that cannot be read is
        // assumed to be there (the check then trusts its owner alone).
        return (at, s, hasAccessACL(pathFD: fd))
    }

    /// Runs `check`, if any, on the folders and file the walk holds; a refusal is thrown.
    private static func judge(
        _ check: FileReferenceCheck?, _ path: String, _ folder: Judged?, _ folders: [FolderSeen], file: stat?
    ) throws(StoreError) {
        guard let check else { return }
        guard let folder else { throw StoreError(.permissionDenied, "\(path) names no file below its root") }
        if let why = check.refusal(
            UnlinkSubject(
                path: path, folderPath: folder.path, folder: folder.status, folderHasACL: folder.acl, file: file,
                folders: folders))
        {
            throw StoreError(.permissionDenied, why, detail: .string(path))
        }
    }

    /// Nothing at `path` below `folder`: judged, with `check`, on that folder, which the
    /// state then names.
    private static func missing(
        _ check: FileReferenceCheck?, _ path: String, _ folder: Judged?, _ folders: [FolderSeen]
    ) throws(StoreError) -> FileState {
        guard let check else { return .missing }
        try judge(check, path, folder, folders, file: nil)
        var state = FileState.missing
        state.judgement = FileJudgement(uid: check.uid, owner: check.owner, folder: folders.last)
        return state
    }

    /// Tests: run by the walk with each path it has just looked at, by root (and by the probe
    /// with the root itself before it looks at anything).
    static let stepHooks = Mutex<[String: @Sendable (String) -> Void]>([:])
    /// True once a test set a hook: the walk does not lock for none.
    static let anyStepHook = Atomic<Bool>(false)

    /// Tests: by root, the errno the walk's look at each path gets instead of its own (nil:
    /// its own), as a full descriptor table would fail an open or a bad disk a statx: the
    /// open of each name below the root, the statx of the root itself; set with `anyStepHook`.
    static let lookFailures = Mutex<[String: @Sendable (String) -> Int32?]>([:])

    /// Tests: roots whose files the late look takes as on a filesystem whose times may be
    /// another clock's, wherever the test's folders are; set with `anyStepHook`.
    static let foreignTimesRoots = Mutex<Set<String>>([])

    private static func foreignTimes(_ root: String) -> Bool {
        anyStepHook.load(ordering: .relaxed) && foreignTimesRoots.withLock { $0.contains(root) }
    }

    /// True when a test fails the open of `path` (below `root`): `opened` is closed.
    private static func failsOpen(_ root: String, _ path: String, _ opened: Int32) -> Bool {
        guard anyStepHook.load(ordering: .relaxed), injected(root, path) != 0 else { return false }
        close(opened)
        return true
    }

    private static func injected(_ root: String, _ path: String) -> Int32 {
        guard anyStepHook.load(ordering: .relaxed) else { return 0 }
        return lookFailures.withLock { $0[root] }?(path) ?? 0
    }

    /// An errno that says nothing about the file: the process or the system short of
    /// descriptors or memory, an I/O error, an interrupted or would-block call. A look that
    /// ends on one is tried again later, never taken as "gone" or "not the caller's".
    static func isTransient(_ e: Int32) -> Bool {
        e == EMFILE || e == ENFILE || e == ENOMEM || e == EIO || e == EINTR || e == EAGAIN
    }

    private static func stepped(_ root: String, _ path: String) {
        guard anyStepHook.load(ordering: .relaxed) else { return }
        stepHooks.withLock { $0[root] }?(path)
    }

    private static func crossing(_ at: String, _ path: String) -> StoreError {
        StoreError(
            .unsafePath, "\(at) is a mount point below the root: files across it are not managed", detail: .string(path)
        )
    }

    /// Like `probe`, but never throws: nil when it cannot tell (a symlink or a mount on the
    /// way, not a regular file, an error), so that the caller keeps what it recorded before.
    /// Used when refreshing held files and recording the identity of a file being queued.
    static func identity(path: String, root: String, roots: ManagedRoots) -> FileState? {
        try? probe(path: path, root: root, roots: roots)
    }
}

extension StoreError {
    /// This error, caused by a system call that failed with `e`.
    func failing(_ e: Int32) -> StoreError {
        var error = self
        error.systemError = e
        return error
    }

    /// The transient errno that ended a file's look, if that is what ended it.
    var transientErrno: Int32? { systemError.flatMap { FileProbe.isTransient($0) ? $0 : nil } }
}
