// On a root on a network file system the name's last look before unlinkat is asked of the
// server, not the kernel's attribute cache (assetd(8), The unlink queue): another host may have
// renamed a file over the name within the cache's time. No NFS here: the classification is
// judged on statfs types, a local root made to read as NFS shows the look is taken (and none on
// a local root), and the look itself is run on a local folder. That it catches a name another
// NFS client replaced is not tested end to end.

import Foundation
import Glibc
import Synchronization
import Testing

@testable import AssetStore
import AssetStoreTestSupport

@Suite struct NetworkRootLookTests {
    @Test("NFS, SMB, Ceph and AFS are looked at afresh; local, cluster, FUSE and 9p ones not; unknown is")
    func classification() {
        let network: [Int64] = [0x6969, 0x517B, 0xFF53_4D42, 0xFE53_4D42, 0x00C3_6400, 0x5346_414F, 0x6B41_4653]
        for t in network { #expect(RootPins.isNetwork(t), "\(String(t, radix: 16))") }
        // ext4, XFS, Btrfs, tmpfs, F2FS, OCFS2, GFS2, overlayfs; FUSE and 9p, where the look
        // cannot tell a name renamed over (docs/DESIGN.md)
        let local: [Int64] = [
            0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010, 0x7461_636F, 0x0116_1970, 0x794C_7630,
            RootPins.fuseMagic, 0x0102_1997,
        ]
        for t in local { #expect(!RootPins.isNetwork(t), "\(String(t, radix: 16))") }
        #expect(RootPins.isNetwork(nil))
    }

    @Test("a local or FUSE root's sweep takes no fresh look; the same root read as NFS takes one a file, and unlinks")
    func lookChosen() throws {
        let f = try Fixture()
        let pins = f.store.roots.pins
        try #require(!RootPins.isNetwork(fileSystemType(of: f.root)), "the test root must be local")
        #expect(f.store.roots.pins.onNetwork([f.root]).isEmpty)
        let local = try f.makeFile("a/one.bin")
        try f.hold(local, key: "k")
        try f.delete(ref("c", "k"))
        #expect(try f.store.sweep().unlinked == [local])
        #expect(pins.freshLooks.load(ordering: .relaxed) == 0)

        f.store.roots.pins.setFileSystem(RootPins.fuseMagic, of: f.root)
        let fuse = try f.makeFile("a/fuse.bin")
        try f.hold(fuse, key: "k1")
        try f.delete(ref("c", "k1"))
        #expect(try f.store.sweep().unlinked == [fuse])
        #expect(pins.freshLooks.load(ordering: .relaxed) == 0)

        f.store.roots.pins.setFileSystem(0x6969, of: f.root)
        #expect(f.store.roots.pins.onNetwork([f.root]) == [f.root])
        let remote = try f.makeFile("a/two.bin")
        try f.hold(remote, key: "k2")
        try f.delete(ref("c", "k2"))
        #expect(try f.store.sweep().unlinked == [remote])
        #expect(pins.freshLooks.load(ordering: .relaxed) == 1)
        #expect(!f.exists(remote))
    }

    @Test("the fresh look passes the judged file and keeps one renamed over its name")
    func lookAfresh() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        let folder = open(f.root + "/a", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(folder >= 0)
        defer { close(folder) }
        let judged = try FileStatus.of(path).get()
        #expect(SafeUnlinker.lookAfresh(dirfd: folder, leaf: "one.bin", as: judged) == nil)
        let other = try f.makeFile("a/other.bin")
        #expect(rename(other, path) == 0)
        #expect(SafeUnlinker.lookAfresh(dirfd: folder, leaf: "one.bin", as: judged) == .identityChanged)
        #expect(unlink(path) == 0)
        #expect(SafeUnlinker.lookAfresh(dirfd: folder, leaf: "one.bin", as: judged) == .alreadyGone)
    }
}
