// A root the daemon can only read (a read-only mount; under the unit, ProtectSystem=strict
// without the root in ReadWritePaths) is warned of at start and on every SIGHUP, naming
// ReadWritePaths, and the daemon still starts (docs/DESIGN.md, Roots). A read-only bind
// mount of the root's folder stands in for the unit's namespace.

import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

/// True when this process may bind-mount (root, CAP_SYS_ADMIN).
private let canBind = getuid() == 0 && Tmpfs.available

@Suite("read-only roots") struct ReadOnlyRootTests {
    @Test(
        "a read-only root is warned of at start and on reload, naming ReadWritePaths; its files still register",
        .enabled(if: canBind, "bind mounts need root (CAP_SYS_ADMIN)"))
    func warnedAtStartAndReload() throws {
        let h = try DaemonHarness(start: false)
        let warning = "root \(h.root) is on a read-only file system or mount"
        let writable = try runProcess(Binaries.assetd, ["--config", h.configPath, "--check-config"])
        #expect(writable.status == 0 && !writable.stderr.contains(warning), "\(writable.stderr)")
        let real = h.dir + "/real"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try "x".write(toFile: real + "/a.bin", atomically: false, encoding: .utf8)
        try #require(mount(real, h.root, nil, UInt(MS_BIND), nil) == 0, "mount --bind: errno \(errno)")
        defer { umount2(h.root, Int32(MNT_DETACH)) }
        try #require(
            mount("none", h.root, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil) == 0, "remount ro: errno \(errno)")
        let check = try runProcess(Binaries.assetd, ["--config", h.configPath, "--check-config"])
        #expect(check.status == 0 && check.stderr.contains("warning: " + warning), "\(check.stderr)")
        try h.start()
        defer { h.stop() }
        #expect(h.log.contains(warning), "\(h.log)")
        #expect(h.log.contains("ReadWritePaths"), "\(h.log)")
        // Still serving: its files register and read.
        let put = try h.assetctl("put", "c", "k", "--file", h.root + "/a.bin")
        #expect(put.status == 0, "\(put.stderr)")
        try h.reload()
        #expect(h.log.components(separatedBy: warning).count - 1 == 2, "warned again on reload: \(h.log)")
        // Of the running roots, so before whatever in the reload can fail (here the file).
        h.extraConfig = "[files\n"
        try h.writeConfig()
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.components(separatedBy: warning).count - 1 == 3, "warned on a failed reload: \(h.log)")
    }
}
