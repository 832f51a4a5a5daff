// Which folder may stand for a pinned root (ManagedRoots+Pins.swift), judged on made-up pins:
// the cases no test machine can make for real (a btrfs subvolume made in place, a FUSE mount
// over the root) and the list of accepted folders staying bounded as mounts come and go.

import Testing

@testable import AssetStore

@Suite struct RootPinDecisionTests {
    private let place: [UInt8] = Array("/srv/cache".utf8)

    private func pin(device: UInt64, inode: UInt64, mount: UInt64?, fuse: Bool = false) -> RootPins.Pin {
        RootPins.Pin(
            device: device, inode: inode, mountID: mount, location: place, fileSystem: fuse ? RootPins.fuseMagic : nil)
    }

    @Test("a new device on the anchor's own mount (a btrfs subvolume made in place) is refused")
    func subvolumeInPlace() {
        let anchor = pin(device: 10, inode: 256, mount: 40)
        #expect(!RootPins.admits(pin(device: 11, inode: 256, mount: 40), after: [anchor]))
    }

    @Test("a new device on a new mount at the anchor's place (a disk mounted late) is admitted")
    func diskMounted() {
        let anchor = pin(device: 10, inode: 256, mount: 40)
        #expect(RootPins.admits(pin(device: 12, inode: 2, mount: 41), after: [anchor]))
    }

    @Test("a FUSE mount over a root that was not on FUSE is refused; elsewhere, or not at the place, too")
    func fuseAndPlace() {
        let anchor = pin(device: 10, inode: 256, mount: 40)
        #expect(!RootPins.admits(pin(device: 13, inode: 1, mount: 42, fuse: true), after: [anchor]))
        var elsewhere = pin(device: 12, inode: 2, mount: 41)
        elsewhere.location = Array("/tmp/x".utf8)
        #expect(!RootPins.admits(elsewhere, after: [anchor]))
    }

    @Test("switching between two folders many times keeps one entry per folder")
    func boundedList() {
        let anchor = pin(device: 10, inode: 256, mount: 40)
        let disk = pin(device: 12, inode: 2, mount: 41)
        var pins = ["/srv/cache": [anchor]]
        for _ in 0..<100 {
            RootPins.accept(disk, at: "/srv/cache", in: &pins)
            RootPins.accept(anchor, at: "/srv/cache", in: &pins)
        }
        #expect((pins["/srv/cache"]?.count ?? 0) <= 3)
        #expect(pins["/srv/cache"]?.first?.isFolder(of: anchor) == true, "the anchor stays first")
        for d in UInt64(100)..<UInt64(200) {
            RootPins.accept(pin(device: d, inode: 2, mount: d), at: "/srv/cache", in: &pins)
        }
        #expect(pins["/srv/cache"]?.count == RootPins.maxPins)
        #expect(pins["/srv/cache"]?.first?.isFolder(of: anchor) == true)
    }
}
