// A root swapped for a symlink while the store is open (by whoever may write a folder above
// it): the root is pinned to the folder it was when the store opened, so a put through the
// swapped root fails unsafe_path and a queued file reached through it is kept, not unlinked.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct RootPinTests {
    @Test("a put naming a file through a root swapped for a symlink fails unsafe_path and registers nothing")
    func putThroughSwappedRoot() throws {
        let f = try Fixture()
        let elsewhere = f.dir + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: elsewhere + "/f.bin", contents: Data([1, 2, 3])))
        #expect(rename(f.root, f.dir + "/root.real") == 0 && symlink(elsewhere, f.root) == 0)
        let e = expectCode(.unsafePath) { try f.hold(f.root + "/f.bin", key: "x") }
        #expect(e != nil, "a file outside the root was registered through the swapped root")
        #expect(e?.message.contains("not the folder it was") == true, "\(String(describing: e))")
    }

    @Test("a queued file reached through a root swapped for a symlink is kept and failed; once undone it goes")
    func queuedFileThroughSwappedRoot() throws {
        let f = try Fixture()
        let path = try f.makeFile("f.bin")
        try f.hold(path, key: "x")
        try f.delete(ref("c", "x"))
        // The root moved away, the queued file (same inode) moved elsewhere, the root's name
        // made a symlink to there: the queued path reaches the very file, outside the root.
        let real = f.dir + "/root.real"
        let elsewhere = f.dir + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(rename(f.root, real) == 0 && rename(real + "/f.bin", elsewhere + "/f.bin") == 0)
        #expect(symlink(elsewhere, f.root) == 0)
        let report = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(f.exists(elsewhere + "/f.bin"), "a file outside the root was unlinked through the swapped root")
        #expect(report.failed.map(\.path) == [path] && report.pending == 1, "\(report)")

        // Put back: the row was kept, and now goes.
        #expect(unlink(f.root) == 0 && rename(real, f.root) == 0 && rename(elsewhere + "/f.bin", path) == 0)
        let again = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(again.unlinked == [path] && !f.exists(path), "\(again)")
    }

    @Test("a queued file under a root renamed away is kept and failed, not dropped as gone; renamed back it goes")
    func queuedFileUnderRootRenamedAway() throws {
        let f = try Fixture()
        let path = try f.makeFile("d/f.bin")
        try f.hold(path, key: "x")
        try f.delete(ref("c", "x"))
        let away = f.dir + "/root.away"
        #expect(rename(f.root, away) == 0)
        let report = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(report.unlinked.isEmpty && report.failed.map(\.path) == [path] && report.pending == 1, "\(report)")
        #expect(f.exists(away + "/d/f.bin"))

        #expect(rename(away, f.root) == 0)
        let again = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(again.unlinked == [path] && !f.exists(path), "\(again)")
    }

    @Test("verify with repair leaves the objects of a root renamed away alone and reports the root")
    func verifyRepairUnderRootRenamedAway() throws {
        let f = try Fixture()
        let path = try f.makeFile("d/f.bin")
        try f.hold(path, key: "x")
        #expect(rename(f.root, f.dir + "/root.away") == 0)
        let report = try f.verify(repair: true)
        #expect(report.of("missing_file").isEmpty, "\(report.problems.map(\.json))")
        #expect(report.of("root_missing").map(\.subject) == [["path": .string(f.root)]])
        #expect(try f.exists(ref("c", "x")))
        #expect(try f.store.read { try $0.edges(EdgeFilter(source: ref("c", "x"))) }.count == 1)
    }

    @Test("a holder put again while its root is away keeps what was recorded of its file, which goes once back")
    func reputUnderRootRenamedAway() throws {
        let f = try Fixture()
        let path = try f.makeFile("d/f.bin")
        try f.hold(path, key: "x")
        let away = f.dir + "/root.away"
        #expect(rename(f.root, away) == 0)
        try f.hold(path, key: "x")  // the same value again: the file is not there to be read
        try f.delete(ref("c", "x"))
        let report = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(report.failed.map(\.path) == [path] && report.pending == 1, "\(report)")

        #expect(rename(away, f.root) == 0)
        let again = try f.store.sweep(retryFailed: true, batch: 1000, threads: 1)
        #expect(again.unlinked == [path] && again.skipped.isEmpty, "\(again)")
        #expect(!f.exists(path), "the file of a root that came back was left behind, unregistered")
    }
}

@Suite struct RootPinChainTests {
    @Test("a root renamed away and made anew in place is not the pinned folder: unsafe_path")
    func remadeInPlace() throws {
        let f = try Fixture()
        #expect(rename(f.root, f.dir + "/root.real") == 0 && mkdir(f.root, 0o755) == 0)
        #expect(FileManager.default.createFile(atPath: f.root + "/f.bin", contents: Data([1, 2, 3])))
        let e = expectCode(.unsafePath) { try f.hold(f.root + "/f.bin", key: "x") }
        #expect(e?.message.contains("not the folder it was") == true, "\(String(describing: e))")
    }

    @Test(
        "a mount on a root made anew, then unmounted, does not make the new folder the root",
        .enabled(if: Tmpfs.available, "mounting needs CAP_SYS_ADMIN"))
    func mountChain() throws {
        let f = try Fixture()
        #expect(rename(f.root, f.dir + "/root.real") == 0 && mkdir(f.root, 0o755) == 0)
        // A file system mounted at the root's place is accepted (a disk mounted late)...
        #expect(Tmpfs.mount(f.root, mib: 1))
        var mounted = true
        defer { if mounted { Tmpfs.unmount(f.root) } }
        #expect(FileManager.default.createFile(atPath: f.root + "/m.bin", contents: Data([1])))
        try f.hold(f.root + "/m.bin", key: "m")
        // ...but once it is gone, the folder below it is still not the pinned one.
        Tmpfs.unmount(f.root)
        mounted = false
        #expect(FileManager.default.createFile(atPath: f.root + "/f.bin", contents: Data([1, 2, 3])))
        let e = expectCode(.unsafePath) { try f.hold(f.root + "/f.bin", key: "x") }
        #expect(e != nil, "the folder made in place of the root was accepted after a mount came and went")
    }

    @Test("verify --orphans reports a root that is no longer its pinned folder instead of skipping it silently")
    func verifyReportsMovedRoot() throws {
        let f = try Fixture()
        #expect(rename(f.root, f.dir + "/root.real") == 0 && mkdir(f.root, 0o755) == 0)
        var o = VerifyOptions()
        o.orphans = true
        let r = try f.store.verify(o)
        #expect(r.problems.map(\.kind) == ["root_moved"] && !r.clean, "\(r.problems.map(\.json))")
    }
}
