// I3 across mount points: a bind mount below a root (same filesystem, so the device matches),
// a tmpfs below a root, or a root that is itself a mount point. No walk descends into another
// mount below a root and no unlink goes through one; the root's own mount is fine. Needs
// CAP_SYS_ADMIN for mount(2); skipped, saying so, when it is refused. Every mount is undone
// (lazily, so a failing test cannot leave one busy) before the fixture's folder goes.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// Mounts made for one test, undone in reverse order when it ends, failed or not (each test
/// defers `undo`, which also keeps this alive to the end). It holds the fixture, so the
/// fixture's folder is removed only once nothing is mounted in it.
private final class Mounts {
    private var points = [String]()
    private let fixture: Fixture

    init(_ fixture: Fixture) {
        self.fixture = fixture
    }

    func bind(_ source: String, at target: String) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        guard mount(source, target, nil, UInt(MS_BIND), nil) == 0 else {
            throw SetupFailed(what: "bind \(target): errno \(errno)")
        }
        points.append(target)
    }

    /// A file mounted over an existing file.
    func bind(_ source: String, atFile target: String) throws {
        guard mount(source, target, nil, UInt(MS_BIND), nil) == 0 else {
            throw SetupFailed(what: "bind \(target): errno \(errno)")
        }
        points.append(target)
    }

    func tmpfs(at target: String) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        guard mount("tmpfs", target, "tmpfs", 0, "size=1m") == 0 else {
            throw SetupFailed(what: "tmpfs \(target): errno \(errno)")
        }
        points.append(target)
    }

    func undo() {
        for p in points.reversed() { umount2(p, Int32(MNT_DETACH)) }
        points = []
    }

    deinit { undo() }
}

@Suite(.enabled(if: canMount, "mounting needs CAP_SYS_ADMIN"))
struct MountPointTests {
    @Test("the orphan walk enters no bind mount or tmpfs below a root: --delete-orphans leaves their files alone")
    func orphanWalkStaysOnTheRootsMount() throws {
        let f = try Fixture()
        let mounts = Mounts(f)
        defer { mounts.undo() }
        let outside = f.dir + "/outside"
        let canary = outside + "/canary.bin"
        try writeFile(canary)
        try setModificationTime(canary, 0)
        try mounts.bind(outside, at: f.root + "/bm")
        try mounts.tmpfs(at: f.root + "/tm")
        let onTmpfs = f.root + "/tm/canary.bin"
        try writeFile(onTmpfs)
        try setModificationTime(onTmpfs, 0)
        // A real orphan on the root's own mount, to show the walk ran.
        let orphan = try f.makeFile("d/orphan.bin")
        try setModificationTime(orphan, 0)

        f.tagRoots()
        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.of("orphan").map { $0.subject["path"] } == [.string(orphan)], "\(r.problems)")
        #expect(!f.exists(orphan))
        #expect(f.exists(canary), "the file outside the root, seen through a bind mount below it, was deleted")
        #expect(f.exists(onTmpfs))
    }

    @Test("a file across a bind mount below the root is refused at put with unsafe_path")
    func registeringAcrossAMountIsRefused() throws {
        let f = try Fixture()
        let mounts = Mounts(f)
        defer { mounts.undo() }
        let outside = f.dir + "/outside"
        try writeFile(outside + "/x.bin")
        try mounts.bind(outside, at: f.root + "/bm")
        for path in [f.root + "/bm/x.bin", f.root + "/bm/not-yet.bin", f.root + "/bm/sub/not-yet.bin"] {
            let e = expectCode(.unsafePath) { try f.hold(path, key: "k") }
            #expect(e != nil, "\(path)")
        }
        #expect(try f.store.read { try $0.file(f.root + "/bm/x.bin") } == nil)
    }

    @Test("a file bind-mounted over a file's name below the root is refused at put with unsafe_path")
    func fileMountedOverItsNameIsRefused() throws {
        let f = try Fixture()
        let mounts = Mounts(f)
        defer { mounts.undo() }
        let outside = f.dir + "/outside.bin"
        try writeFile(outside)
        let path = try f.makeFile("a/x.bin")
        try mounts.bind(outside, atFile: path)
        let e = expectCode(.unsafePath) { try f.hold(path, key: "k") }
        #expect(e != nil)
        #expect(try f.store.read { try $0.file(path) } == nil)
    }

    @Test("a queued file whose folder became a mount point is not unlinked: unsafe_path")
    func unlinkDoesNotCrossAMount() throws {
        let f = try Fixture()
        let mounts = Mounts(f)
        defer { mounts.undo() }
        let path = try f.makeFile("a/x.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        // The folder bind-mounted on itself: the very file recorded (device and inode match),
        // but reached across a mount.
        try mounts.bind(f.root + "/a", at: f.root + "/a")
        let r = try f.store.sweep()
        #expect(r.unlinked.isEmpty && r.skipped.map(\.reason) == [.unsafePath], "\(r.unlinked) \(r.skipped)")
        #expect(f.exists(path))
    }

    @Test("a root that is itself a mount point works: files on it are registered, unlinked and walked")
    func rootThatIsAMountPoint() throws {
        let f = try Fixture()
        let mounts = Mounts(f)
        defer { mounts.undo() }
        try mounts.tmpfs(at: f.root)
        let held = try f.makeFile("a/held.bin")
        try f.hold(held, key: "k")
        try f.delete(ref("c", "k"))
        let r = try f.store.sweep()
        #expect(r.unlinked == [held] && r.skipped.isEmpty, "\(r.skipped)")
        let orphan = try f.makeFile("b/orphan.bin")
        try setModificationTime(orphan, 0)
        f.tagRoots()  // on the tmpfs now over the root
        let v = try f.verify(orphans: true, deleteOrphans: true)
        #expect(v.of("orphan").map { $0.subject["path"] } == [.string(orphan)])
        #expect(!f.exists(orphan))
    }

    @Test("a nested root that is a mount point is its own: its files are unlinked from the outer root's walk")
    func nestedRootThatIsAMountPoint() throws {
        let f = try Fixture { c in c.roots.append(c.roots[0] + "/inner") }
        let mounts = Mounts(f)
        defer { mounts.undo() }
        try mounts.tmpfs(at: f.root + "/inner")
        let held = try f.makeFile("inner/a/held.bin")
        try f.hold(held, key: "k")
        try f.delete(ref("c", "k"))
        let r = try f.store.sweep()
        #expect(r.unlinked == [held] && r.skipped.isEmpty, "\(r.skipped)")
    }
}
