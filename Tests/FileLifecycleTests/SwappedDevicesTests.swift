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

/// Whether one image can be attached to a loop device here: /dev/loop-control can be there
/// while no loop node is usable (a container).
private let loopDevices: Bool = {
    guard
        canMount && FileManager.default.isExecutableFile(atPath: losetup)
            && FileManager.default.isExecutableFile(atPath: mkfs)
            && FileManager.default.fileExists(atPath: "/dev/loop-control")
    else { return false }
    let image = NSTemporaryDirectory() + "/assetd-loop-probe-\(getpid()).img"
    defer { unlink(image) }
    guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, 1 << 20) == 0,
        let device = run(losetup, "-f", "--show", image)
    else { return false }
    detach(device, holding: image)
    return true
}()

/// The loop devices that hold `image` now.
private func loops(holding image: String) -> [String] {
    (run(losetup, "--list", "--noheadings", "--output", "NAME", "--associated", image) ?? "")
        .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
}

/// Detaches `device` if it still holds `image`: once detached, the number may be another's
/// (another run's, udisks'), whose device this test must not take away.
private func detach(_ device: String, holding image: String) {
    if loops(holding: image).contains(device) { run(losetup, "-d", device) }
}

/// Two ext4 images, each on a loop device and mounted at a root. `release` undoes whatever
/// part of `setUp` or `swap` was done, and detaches only the devices that hold its images.
private final class SwappableDisks {
    let images: [String]
    let roots: [String]
    /// The loop devices attached here, in root order: each held its image when attached.
    private(set) var devices: [String] = []
    private var mounted: [String] = []

    init(_ f: Fixture, roots: [String]) {
        self.roots = roots
        images = roots.indices.map { f.dir + "/disk\($0).img" }
    }

    func setUp() throws {
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
        for (device, root) in zip(devices, roots) {
            guard mount(device, root, "ext4", 0, nil) == 0 else {
                throw SetupFailed(what: "mount \(device) on \(root): errno \(errno)")
            }
            mounted.append(root)
        }
    }

    /// Unmounts both, detaches them, and attaches each image to the other's loop device. Another
    /// `losetup -f` (or a lazy detach still under way) may take a number meanwhile: SetupFailed.
    func swap() throws {
        unmountAll()
        for (device, image) in zip(devices, images) { detach(device, holding: image) }
        let numbers = devices.reversed()
        devices = []
        for (device, image) in zip(numbers, images) {
            guard run(losetup, device, image) != nil, loops(holding: image).contains(device) else {
                throw SetupFailed(what: "losetup \(device) \(image) (taken meanwhile?)")
            }
            devices.append(device)
        }
        try mountAll()
    }

    private func unmountAll() {
        for root in mounted.reversed() where umount(root) != 0 { umount2(root, Int32(MNT_DETACH)) }
        mounted = []
    }

    /// Unmounts and detaches what is still this test's (before the fixture removes its folder).
    func release() {
        unmountAll()
        for (device, image) in zip(devices, images) { detach(device, holding: image) }
        devices = []
    }
}

/// Runs a step of the disks' setup; one that cannot be done here skips the test, saying why.
private func orSkip(_ body: () throws -> Void) throws {
    do { try body() } catch let e as SetupFailed { try Test.cancel("\(e)") }
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
        let disks = SwappableDisks(f, roots: roots)
        defer {
            f.store?.close()
            disks.release()
            withExtendedLifetime(f) {}
        }
        try orSkip { try disks.setUp() }
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
        try orSkip { try disks.swap() }
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
