// A look owed since the delete (a transient error, TransientLookTests) is taken by the sweep,
// later: it must not take a file that came to the path after the delete (a new file, or an
// older one in a folder renamed onto the way), nor trust a clock it cannot vouch for
// (OwedLook.swift). The look is dated by the ctime of the file made before it, as the delete
// that owed it would have seen it; what changes after is made to have a later ctime (a chmod
// repeated until the kernel's coarse clock ticks, a few milliseconds at most). Those that rest on
// ctimes run only where /tmp's filesystem keeps local times (`TransientLookTests.localTimes`;
// not an overlayfs), and each kept file's test asserts why it was kept; the filesystem whose
// times may be another clock's is played by a test hook (`FileProbe.foreignTimesRoots`).

import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct OwedLookTests {
    let t = TransientLookTests()

    /// The ctime of `path`, in nanoseconds.
    func ctime(_ path: String) -> Int64 {
        var st = stat()
        precondition(lstat(path, &st) == 0, "cannot stat \(path)")
        return Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
    }

    /// Changes `path`'s ctime (its mode set again) until it is past `c`.
    func changed(_ path: String, past c: Int64) {
        var st = stat()
        precondition(lstat(path, &st) == 0)
        while ctime(path) <= c { precondition(chmod(path, st.st_mode & 0o7777) == 0) }
    }

    /// Queues `path` (registered before it existed, made since) with its look owed, dated so
    /// that the files made so far are older than it.
    func owed(_ f: Fixture, _ path: String, olderThan c: Int64) throws {
        _ = try t.failing(f.root, path, EMFILE) { try f.delete(ref("c", "k")) }
        try f.changeOwedLooks { $0.since = c + OwedLook.margin }
    }

    @Test("a file made at the path after its look was owed is not taken", .enabled(if: TransientLookTests.localTimes))
    func newFileKept() throws {
        let f = try Fixture()
        let path = f.root + "/later.bin"
        try f.hold(path, key: "k")
        try f.makeFile("later.bin")
        let before = ctime(path)
        try owed(f, path, olderThan: before)
        // Another file put there since (another user's, or a version not put yet).
        #expect(unlink(path) == 0)
        try f.makeFile("later.bin", size: 20)
        changed(path, past: before)
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(f.exists(path))
        // Kept because the late look could not vouch for it, and said so apart.
        #expect(sweep.lookNotTaken.map(\.path) == [path])
        #expect(sweep.lookNotTaken.first?.why.contains("changed after its look was owed") == true)
    }

    @Test(
        "an older file in a folder renamed onto the way after the look was owed is not taken",
        .enabled(if: TransientLookTests.localTimes))
    func renamedFolderKept() throws {
        let f = try Fixture()
        let path = f.root + "/a/x.bin"
        try f.hold(path, key: "k")
        try f.makeFile("a/x.bin")
        try f.makeFile("b/x.bin")
        let before = max(ctime(path), ctime(f.root + "/b/x.bin"))
        try owed(f, path, olderThan: before)
        #expect(rename(f.root + "/a", f.root + "/gone") == 0)
        #expect(rename(f.root + "/b", f.root + "/a") == 0)
        changed(f.root + "/a", past: before)
        #expect(ctime(path) <= before)
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(f.exists(path))
        // For the folder's change, not the file's nor its filesystem's clock.
        #expect(sweep.lookNotTaken.first?.why.contains("\(f.root)/a changed after") == true, "\(sweep.lookNotTaken)")
    }

    @Test("a file on a filesystem whose times may be another clock's is not taken late")
    func foreignTimesKept() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try t.holdChecked(f, path)
        try t.failing(f.root, path, EMFILE) { _ = try f.delete(ref("c", "k")) }
        try f.oweLater()
        FileProbe.foreignTimesRoots.withLock { _ = $0.insert(f.root) }
        defer { FileProbe.foreignTimesRoots.withLock { _ = $0.remove(f.root) } }
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(sweep.lookNotTaken.first?.why.contains("another clock's") == true, "\(sweep.lookNotTaken)")
        #expect(f.exists(path))
    }

    @Test("a look owed by another process, or before the wall clock went back, takes nothing")
    func clockNotVouchedFor() throws {
        let changes: [(inout OwedLook) -> Void] = [{ $0.process &+= 1 }, { $0.offset += 10_000_000_000 }]
        for change in changes {
            let f = try Fixture()
            let path = f.root + "/later.bin"
            try f.hold(path, key: "k")
            try f.makeFile("later.bin")
            try owed(f, path, olderThan: ctime(path) + 10_000_000_000)
            try f.changeOwedLooks(change)
            let sweep = try f.store.sweep()
            #expect(sweep.unlinked.isEmpty)
            #expect(sweep.skipped.map(\.path) == [path])
            #expect(f.exists(path))
            #expect(sweep.lookNotTaken.first?.why.contains("another assetd process") == true, "\(sweep.lookNotTaken)")
        }
    }

    @Test(
        "an owed look whose root is on another filesystem now takes nothing, and stays owed",
        .enabled(if: TransientLookTests.localTimes))
    func rootRemountedKept() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try t.holdChecked(f, path)
        try t.failing(f.root, path, EMFILE) { _ = try f.delete(ref("c", "k")) }
        // As if the root's disk was unmounted since: the pin accepts its bare mount point.
        try f.changeOwedLooks { look in
            look.since += 10_000_000_000
            look.rootDevice = look.rootDevice.map { $0 &+ 1 }
        }
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep.skipped)")
        let failed = try #require(sweep.failed.first)
        #expect(failed.path == path && failed.error.contains("not the folder it was"), "\(failed.error)")
        #expect(sweep.pending == 1)
        #expect(f.exists(path))
        let row = try #require(try f.store.pending().first)
        #expect(row.path == path)
        try f.changeOwedLooks { $0.rootDevice = $0.rootDevice.map { $0 &- 1 } }
        #expect(try f.store.sweep(retryFailed: true).unlinked == [path])
    }

    /// Set once, from any thread.
    final class Once: Sendable {
        private let done = Mutex(false)
        func first() -> Bool {
            done.withLock { was in
                defer { was = true }; return !was
            }
        }
    }

    @Test(
        "a disk mounted on the root after its check, before the walk: its stale file is not taken",
        .enabled(if: Tmpfs.available))
    func rootMountedDuringLook() throws {
        let f = try Fixture()
        // Registered before it existed: no claim judges the late look, only the root's check.
        let path = f.root + "/a/mine.bin"
        try f.hold(path, key: "k")
        try f.makeFile("a/mine.bin")
        try t.failing(f.root, path, EMFILE) { _ = try f.delete(ref("c", "k")) }
        try f.changeOwedLooks { $0.since += 10_000_000_000 }
        // The root checked, the walk about to open it: a disk mounted there, holding a stale
        // file of the same name (older than the look, as far as its ctime tells).
        let root = f.root
        let once = Once()
        FileProbe.stepHooks.withLock {
            $0[root] = { p in
                guard p == root, once.first() else { return }
                precondition(Tmpfs.mount(root, mib: 1))
                precondition(mkdir(root + "/a", 0o755) == 0)
                let fd = open(root + "/a/mine.bin", O_WRONLY | O_CREAT, 0o644)
                precondition(fd >= 0)
                close(fd)
            }
        }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer {
            FileProbe.stepHooks.withLock { $0[root] = nil }
            Tmpfs.unmount(root)
        }
        let sweep = try f.store.sweep()
        #expect(!once.first(), "the walk ran")
        #expect(sweep.unlinked.isEmpty, "\(sweep.unlinked)")
        #expect(f.exists(path), "the mounted disk's file")
        #expect(sweep.lookNotTaken.first?.why.contains("not the folder it was") == true, "\(sweep.lookNotTaken)")
    }

    @Test("an owed look that finds nothing records the root's device: gone only on that filesystem")
    func nothingThereKeepsRootDevice() throws {
        let f = try Fixture()
        var look = OwedLook(claim: .none, root: f.store.roots.pins.pin(of: f.root))
        look.since += 10_000_000_000
        #expect(look.rootDevice != nil)
        var file = RegisteredFile(path: f.root + "/nothing.bin", size: 0, device: nil, inode: nil, stamp: .none)
        #expect(file.identify(f.store, claim: .none, again: look) == .done)
        #expect(file.device == look.rootDevice && file.inode == nil)
    }
}
