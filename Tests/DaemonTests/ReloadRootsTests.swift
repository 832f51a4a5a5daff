// SIGHUP does not change the managed roots (a restart does), so it judges policy.min_free
// against the file systems of the roots it runs with, not of those the file names now, and
// says that the new roots wait for a restart. Small tmpfs mounts give two file systems of
// known, different sizes.

import AssetService
import AssetStoreTestSupport
import Foundation
import Testing

@Suite(.enabled(if: Tmpfs.available, "mounting needs CAP_SYS_ADMIN"))
struct ReloadRootsTests {
    /// 64 MiB: more than the 4 MiB tmpfs, far less than the temp folder's file system.
    static let minFree = 64 << 20

    /// Rewrites the config with `roots` and `min_free`, sends SIGHUP and returns the log the
    /// reload added, once it says whether it applied.
    private func reload(_ h: DaemonHarness, roots: String) throws -> String {
        let before = h.log
        let text = h.configText().replacingOccurrences(of: "roots = [\"\(h.root)\"]", with: "roots = [\"\(roots)\"]")
        #expect(text != h.configText(), "the roots line was not found to replace")
        try (text + "\n[policy]\nmin_free = \(ReloadRootsTests.minFree)\n").write(
            toFile: h.configPath, atomically: true, encoding: .utf8)
        kill(h.process!.processIdentifier, SIGHUP)  // started
        var added = ""
        #expect(
            eventually {
                added = String(h.log.dropFirst(before.count))
                return added.contains("reload failed") || added.contains("reloaded")
            }, "\(h.log.suffix(2000))")
        return added
    }

    @Test("a reload judges min_free on the running root's small disk, though the file names a large one")
    func runningRootSmall() throws {
        let h = try DaemonHarness(start: false)
        try #require(Tmpfs.mount(h.root, mib: 4))
        defer {
            h.stop()
            Tmpfs.unmount(h.root)
        }
        chmod(h.root, 0o777)
        let large = h.dir + "/large"
        try FileManager.default.createDirectory(atPath: large, withIntermediateDirectories: true)
        try #require((DaemonConfig.fileSystemSize(of: large)?.total ?? 0) > 2 * Int64(ReloadRootsTests.minFree))
        try h.start()
        let log = try reload(h, roots: large)
        #expect(log.contains("reload failed") && log.contains("policy.min_free"), "\(log)")
        #expect(log.contains("file system of root \(h.root)"), "\(log)")
    }

    @Test("a reload judges min_free on the running root's large disk, though the file names a small one")
    func runningRootLarge() throws {
        let h = try DaemonHarness()
        let small = h.dir + "/small"
        try #require(Tmpfs.mount(small, mib: 4))
        defer {
            h.stop()
            Tmpfs.unmount(small)
        }
        try #require((DaemonConfig.fileSystemSize(of: h.root)?.total ?? 0) > 2 * Int64(ReloadRootsTests.minFree))
        let log = try reload(h, roots: small)
        #expect(log.contains("reloaded") && !log.contains("reload failed"), "\(log)")
        #expect(log.contains("files.roots changed: it takes effect at the next start"), "\(log)")
        #expect(log.contains(h.root), "\(log)")
    }
}
