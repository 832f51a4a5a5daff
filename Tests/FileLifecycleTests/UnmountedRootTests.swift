// I2 when a managed root's filesystem is not mounted at sweep time (a disk not yet mounted
// at boot, an unmounted share): the queued file is not gone, only hidden, so "no such file"
// on another filesystem than the file's must not count as done. Needs CAP_SYS_ADMIN for
// mount(2); skipped, saying so, when it is refused.

import Foundation
import Glibc
import Testing
import AssetStore
import AssetStoreTestSupport

/// A tmpfs at `dir/disk` bind-mounted on the fixture's root, so the root can be unmounted
/// and mounted again without losing the files on it.
private final class Disk {
    let store: String
    let root: String

    init(_ f: Fixture) throws {
        store = f.dir + "/disk"
        root = f.root
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        guard mount("tmpfs", store, "tmpfs", 0, "size=1m") == 0 else { throw SetupFailed(what: "mount tmpfs") }
        try attach()
    }

    func attach() throws {
        guard mount(store, root, nil, UInt(MS_BIND), nil) == 0 else {
            throw SetupFailed(what: "bind mount: errno \(errno)")
        }
    }

    func detach() throws {
        guard umount(root) == 0 else { throw SetupFailed(what: "umount \(root): errno \(errno)") }
    }

    deinit {
        umount2(root, Int32(MNT_DETACH))
        umount2(store, Int32(MNT_DETACH))
    }
}

@Suite(.enabled(if: canMount, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct UnmountedRootTests {
    @Test(
        "a queued file whose filesystem is not mounted at sweep time is kept queued as failed, then unlinked once mounted",
        arguments: ["x.bin", "a/b/x.bin"])
    func rootNotMounted(relative: String) throws {
        let f = try Fixture()
        let disk = try Disk(f)
        let path = try f.makeFile(relative, size: 12)
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        try disk.detach()
        #expect(!f.exists(path), "the root is an empty folder of the parent filesystem now")
        let missed = try f.store.sweep()
        #expect(missed.unlinked.isEmpty, "counted as unlinked while its filesystem was not mounted")
        #expect(missed.failed.map(\.path) == [path])
        #expect(missed.pending == 1)
        #expect(try f.store.pending().first?.lastError?.contains("file system") == true)

        try disk.attach()
        #expect(onDisk(path)?.size == 12, "the file is still on its filesystem")
        let retried = try f.store.sweep(retryFailed: true)
        #expect(retried.unlinked == [path])
        #expect(!f.exists(path))
        #expect(retried.pending == 0)
    }

    @Test("a root that is a folder on the unmounted filesystem (gone with it) keeps its queued file queued as failed")
    func rootBelowMountPointNotMounted() throws {
        // The root is <mount point>/assets: unmounted, the root itself does not exist.
        let f = try Fixture { $0.roots = [$0.roots[0] + "/assets"] }
        let disk = try Disk(f)
        let path = try f.makeFile("assets/a/x.bin", size: 12)
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        try disk.detach()
        #expect(!f.exists(f.root + "/assets"))
        let missed = try f.store.sweep()
        #expect(missed.unlinked.isEmpty, "counted as unlinked while its filesystem was not mounted")
        #expect(missed.pending == 1)

        try disk.attach()
        #expect(onDisk(path)?.size == 12)
        let retried = try f.store.sweep(retryFailed: true)
        #expect(retried.unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("verify --repair does not take files on an unmounted filesystem for missing: their holders and rows stay")
    func verifyWhileNotMounted() throws {
        let f = try Fixture()
        let disk = try Disk(f)
        let path = try f.makeFile("a/x.bin", size: 12)
        try f.hold(path, key: "k")

        try disk.detach()
        let r = try f.verify(repair: true)
        #expect(r.of("missing_file").isEmpty, "\(r.json)")
        #expect(try f.exists(ref("c", "k")))
        #expect(try f.store.read { try $0.file(path) } != nil)

        try disk.attach()
        #expect(try f.verify().found == 0)
        try f.delete(ref("c", "k"))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test(
        "a put while its file's filesystem is not mounted keeps the recorded identity: deleted then, the file is kept queued, then unlinked once mounted"
    )
    func putWhileNotMounted() throws {
        let f = try Fixture()
        let disk = try Disk(f)
        let path = try f.makeFile("a/x.bin", size: 12)
        try f.hold(path, key: "k")

        try disk.detach()
        // A metadata update: the probe finds nothing at the path now.
        try f.put([(ref("c", "k"), ["file": .string(path), "v": 2])])
        #expect(try f.store.read { try $0.file(path) }?.record.device != nil, "the recorded device was dropped")
        try f.delete(ref("c", "k"))
        let missed = try f.store.sweep()
        #expect(missed.unlinked.isEmpty, "counted as unlinked while its filesystem was not mounted")
        #expect(missed.pending == 1)

        try disk.attach()
        #expect(onDisk(path)?.size == 12)
        let retried = try f.store.sweep(retryFailed: true)
        #expect(retried.unlinked == [path])
        #expect(!f.exists(path))
    }
}
