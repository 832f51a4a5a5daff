// Two roots on two disks found in the other order at boot: each filesystem now has the device
// number the other had (assetd(8), "The unlink queue"). Real ext4 images on loop devices,
// attached again the other way round; needs CAP_SYS_ADMIN, losetup and mkfs.ext4, and is
// skipped, saying so, without them.

import Foundation
import Glibc
import Testing
import AssetStore
import AssetStoreTestSupport

/// Runs a tool; its standard output, or nil when it fails.
@discardableResult
private func run(_ tool: String, _ arguments: String...) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool)
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

private let losetup = "/usr/sbin/losetup"
private let mkfs = "/usr/sbin/mkfs.ext4"
private let loopDevices: Bool =
    canMount && FileManager.default.isExecutableFile(atPath: losetup)
    && FileManager.default.isExecutableFile(atPath: mkfs) && FileManager.default.fileExists(atPath: "/dev/loop-control")

/// Two ext4 images, each on a loop device and mounted at a root.
private final class SwappableDisks {
    let images: [String]
    let roots: [String]
    /// The loop devices, in root order.
    var devices: [String] = []

    init(_ f: Fixture, roots: [String]) throws {
        self.roots = roots
        images = roots.indices.map { f.dir + "/disk\($0).img" }
        for (image, root) in zip(images, roots) {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, 16 << 20) == 0,
                run(mkfs, "-q", "-F", image) != nil
            else { throw SetupFailed(what: "mkfs.ext4 \(image)") }
        }
        for image in images {
            guard let device = run(losetup, "-f", "--show", image) else { throw SetupFailed(what: "losetup \(image)") }
            devices.append(device)
        }
        try mountAll()
    }

    func mountAll() throws {
        for (device, root) in zip(devices, roots) where mount(device, root, "ext4", 0, nil) != 0 {
            throw SetupFailed(what: "mount \(device) on \(root): errno \(errno)")
        }
    }

    /// Unmounts both, detaches them, and attaches each image to the other's loop device.
    func swap() throws {
        for root in roots where umount(root) != 0 { throw SetupFailed(what: "umount \(root): errno \(errno)") }
        for device in devices { run(losetup, "-d", device) }
        devices.reverse()
        for (device, image) in zip(devices, images) where run(losetup, device, image) == nil {
            throw SetupFailed(what: "losetup \(device) \(image) (taken meanwhile?)")
        }
        try mountAll()
    }

    /// Unmounts and detaches both (before the fixture removes its folder).
    func release() {
        for root in roots { umount2(root, Int32(MNT_DETACH)) }
        for device in devices { run(losetup, "-d", device) }
        devices = []
    }
}

private func device(_ path: String) -> Int64 {
    var st = stat()
    return stat(path, &st) == 0 ? Int64(st.st_dev) : -1
}

@Suite(.enabled(if: loopDevices, "loop devices need CAP_SYS_ADMIN, losetup and mkfs.ext4"))
struct SwappedDevicesTests {
    @Test(
        "two root disks found in the other order: files registered before are unlinked from their own disk, queued before or deleted after, and nothing of the other disk"
    )
    func swappedDiskNumbers() throws {
        let f = try Fixture { $0.roots = [$0.roots[0] + "/r1", $0.roots[0] + "/r2"] }
        let roots = f.configuration.roots
        f.store.close()
        let disks = try SwappableDisks(f, roots: roots)
        defer {
            f.store?.close()
            disks.release()
        }
        try f.reopen()
        let before = roots.map(device)
        // The same names in both: fresh ext4 filesystems give them the same inode numbers.
        for (r, root) in roots.enumerated() {
            for name in ["f1", "f2", "f3"] {
                let path = root + "/" + name
                #expect(FileManager.default.createFile(atPath: path, contents: Data(root.utf8)))
                try f.hold(path, key: "r\(r)-\(name)")
            }
        }
        // Queued before the swap, not yet swept: r1/f1 and r2/f2.
        try f.delete(ref("c", "r0-f1"), ref("c", "r1-f2"))
        f.store.close()
        try disks.swap()
        #expect(roots.map(device) == before.reversed(), "the numbers did not swap")
        try f.reopen(drain: false)
        let queued = try f.store.sweep()
        #expect(
            Set(queued.unlinked) == [roots[0] + "/f1", roots[1] + "/f2"] && queued.failed.isEmpty,
            "\(queued.failed)")
        // Registered before the swap, deleted after it.
        try f.delete(ref("c", "r0-f3"), ref("c", "r1-f3"))
        let deleted = try f.store.sweep()
        #expect(
            Set(deleted.unlinked) == [roots[0] + "/f3", roots[1] + "/f3"] && deleted.failed.isEmpty,
            "\(deleted.failed)")
        #expect(deleted.pending == 0)
        let left = roots.map {
            (try? FileManager.default.contentsOfDirectory(atPath: $0).filter { $0.hasPrefix("f") }.sorted()) ?? []
        }
        #expect(left == [["f2"], ["f1"]])
        // Each kept file is its own disk's.
        #expect(try String(contentsOfFile: roots[0] + "/f2", encoding: .utf8) == roots[0])
        #expect(try String(contentsOfFile: roots[1] + "/f1", encoding: .utf8) == roots[1])
    }
}
