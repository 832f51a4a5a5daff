// Helpers for the file-lifecycle tests: lstat without following links, files grown in place
// or replaced by a new inode, symlinks and fifos, and a real obstacle to unlink (the immutable
// flag as root, a read-only folder otherwise) that is always taken away before the temp folder goes.

import Foundation
import Glibc
import AssetStore
import AssetStoreTestSupport

/// What lstat says about a path (links are not followed).
struct OnDisk: Equatable {
    var device: Int64
    var inode: Int64
    var size: Int64
    var mtime: Double
    var kind: mode_t

    var isRegular: Bool { kind == S_IFREG }
    var isDirectory: Bool { kind == S_IFDIR }
    var isSymlink: Bool { kind == S_IFLNK }
}

/// True when this process may mount (a tmpfs; bind mounts need the same capability).
let canMount: Bool = {
    let dir = NSTemporaryDirectory() + "assetd-mount-probe-files-\(getpid())"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { rmdir(dir) }
    guard mount("tmpfs", dir, "tmpfs", 0, "size=1m") == 0 else { return false }
    umount(dir)
    return true
}()

/// A system call that failed while setting up a test.
struct SetupFailed: Error, CustomStringConvertible {
    var what: String
    var description: String { "setup failed: \(what)" }
}

/// lstat of `path`, or nil when nothing is there.
func onDisk(_ path: String) -> OnDisk? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return OnDisk(
        device: Int64(bitPattern: UInt64(st.st_dev)), inode: Int64(bitPattern: UInt64(st.st_ino)),
        size: Int64(st.st_size), mtime: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9,
        kind: st.st_mode & S_IFMT)
}

/// Appends `count` bytes to an existing file; the inode stays the same.
func grow(_ path: String, by count: Int) throws {
    guard let h = FileHandle(forWritingAtPath: path) else { throw SetupFailed(what: "open \(path)") }
    defer { try? h.close() }
    try h.seekToEnd()
    try h.write(contentsOf: Data(repeating: 1, count: count))
}

/// Writes a new file beside `path` and renames it over `path`, so the path names a new inode.
func replaceWithNewInode(_ path: String, size: Int) throws {
    let tmp = path + ".replacement"
    try Data(repeating: 9, count: size).write(to: URL(fileURLWithPath: tmp))
    guard rename(tmp, path) == 0 else { throw SetupFailed(what: "rename \(tmp) -> \(path): errno \(errno)") }
}

/// Sets a file's modification time.
func setModificationTime(_ path: String, _ seconds: Double) throws {
    try FileManager.default.setAttributes(
        [.modificationDate: Date(timeIntervalSince1970: seconds)], ofItemAtPath: path)
}

/// Creates the folders of `path` (not `path` itself).
func makeParent(_ path: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
}

/// A symlink at `path` pointing at `target` (which need not exist).
func makeSymlink(at path: String, to target: String) throws {
    try makeParent(path)
    guard symlink(target, path) == 0 else { throw SetupFailed(what: "symlink \(path): errno \(errno)") }
}

/// A named pipe at `path`.
func makeFifo(at path: String) throws {
    try makeParent(path)
    guard mkfifo(path, 0o644) == 0 else { throw SetupFailed(what: "mkfifo \(path): errno \(errno)") }
}

/// A regular file anywhere (outside the root too), with `size` bytes.
func writeFile(_ path: String, size: Int = 10) throws {
    try makeParent(path)
    try Data(repeating: 3, count: size).write(to: URL(fileURLWithPath: path))
}

/// Renames `from` to `to`.
func move(_ from: String, _ to: String) throws {
    guard rename(from, to) == 0 else { throw SetupFailed(what: "rename \(from) -> \(to): errno \(errno)") }
}

/// Makes unlinking `path` fail for real until `remove()` (or deinit): as root the file is made
/// immutable as `chattr +i` does (unlinkat fails with EPERM), otherwise its folder is made
/// read-only (EACCES). It holds the fixture, so the fixture's temp folder (which an immutable
/// file would keep from being removed) outlives the obstacle: deinit always clears the flag.
final class UnlinkObstacle {
    let path: String
    private let fixture: Fixture
    private var active = false
    private var asRoot: Bool { getuid() == 0 }
    private var folder: String { (path as NSString).deletingLastPathComponent }

    /// The errno names an unlink blocked this way reports.
    static let errorNames = ["EPERM", "EACCES"]

    init(_ path: String, in fixture: Fixture) throws {
        self.path = path
        self.fixture = fixture
        if asRoot {
            try UnlinkObstacle.setImmutable(path, true)
        } else {
            guard chmod(folder, 0o555) == 0 else { throw SetupFailed(what: "chmod \(folder): errno \(errno)") }
        }
        active = true
    }

    /// Takes the obstacle away; harmless to call twice.
    func remove() {
        guard active else { return }
        active = false
        if asRoot {
            try? UnlinkObstacle.setImmutable(path, false)
        } else {
            _ = chmod(folder, 0o755)
        }
    }

    deinit { remove() }

    // The ioctls chattr(1) uses (linux/fs.h, 64-bit), called in-process: running
    // /usr/bin/chattr would fork, and a child briefly shares every open file description of
    // this process, other tests' store locks included, so a parallel reopen could find its
    // own lock busy (seen in practice).
    private static let getFlags: UInt = 0x8008_6601  // FS_IOC_GETFLAGS
    private static let setFlags: UInt = 0x4008_6602  // FS_IOC_SETFLAGS
    private static let immutable: Int32 = 0x10  // FS_IMMUTABLE_FL

    private static func setImmutable(_ path: String, _ on: Bool) throws {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw SetupFailed(what: "open \(path): errno \(errno)") }
        defer { close(fd) }
        var flags: Int32 = 0
        guard ioctl(fd, getFlags, &flags) == 0 else {
            throw SetupFailed(what: "FS_IOC_GETFLAGS \(path): errno \(errno)")
        }
        flags = on ? flags | immutable : flags & ~immutable
        guard ioctl(fd, setFlags, &flags) == 0 else {
            throw SetupFailed(what: "FS_IOC_SETFLAGS \(path): errno \(errno)")
        }
    }
}

extension Fixture {
    /// The registry row and edges of a file, or nil.
    func fileReport(_ reference: String) throws -> FileReport? {
        try store.read { try $0.file(reference) }
    }

    /// The `size` column of the default index row of the object with this key.
    func indexedSize(key: String) throws -> JSONValue? {
        try store.query(clause: "WHERE key = ?", parameters: [.string(key)], include: .rows).first?.columns?["size"]
    }

    /// Puts `ref("c", key)` holding `path` through its `file` field.
    @discardableResult
    func hold(_ path: String, key: String) throws -> CommitReport {
        try put([(ref("c", key), ["file": .string(path)])])
    }
}

/// How a test makes an object reference a file.
enum Entry: String, CaseIterable, Sendable {
    /// The object's `file` field (the built-in template).
    case fileField
    /// A manual edge added with `tx.addEdge(… destination: .file(path) …)`.
    case manualEdge

    /// Puts `r` and makes it reference `reference` this way, in one transaction.
    func register(_ reference: String, from r: ObjectRef, in f: Fixture) throws {
        switch self {
        case .fileField:
            try f.put([(r, ["file": .string(reference)])])
        case .manualEdge:
            try f.store.write { tx in
                try tx.put(r, value: ["note": "manual"])
                try tx.addEdge(
                    name: "asset", source: r, destination: .file(reference),
                    rules: .deleteDestinationIfAllSourcesDeleted)
            }
        }
    }
}
