// Roots judged on the file system, not on path strings (assetd.toml(5), files.roots): a bind
// mount shows a folder of a root at a path outside it, so the database's folder, the config
// file or another root can lie inside a root though no path says so. --check-config and start
// refuse such a layout with exit 78, naming both paths and the mount; a plain one still starts.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

/// True when this process may bind-mount (root, CAP_SYS_ADMIN). Each unmount is deferred in
/// a closure naming the harness, which removes its folder only once nothing is mounted there.
private let canBind = getuid() == 0 && Tmpfs.available

@Suite("roots and bind mounts") struct RootBindMountTests {
    /// Writes `h`'s config with `roots` (and another database or socket path) to `path`.
    private func write(
        _ h: DaemonHarness, roots: [String], database: String? = nil, socket: String? = nil, to path: String? = nil
    ) throws {
        let list = roots.map { "\"\($0)\"" }.joined(separator: ", ")
        try h.configText(socket: socket, database: database)
            .replacingOccurrences(of: "roots = [\"\(h.root)\"]", with: "roots = [\(list)]")
            .write(toFile: path ?? h.configPath, atomically: true, encoding: .utf8)
    }

    /// `assetd --check-config` with `config`: its exit status and stderr.
    private func check(_ config: String) throws -> ProcessResult {
        try runProcess(Binaries.assetd, ["--config", config, "--check-config"])
    }

    /// Bind-mounts `source` at `target` (made if missing).
    private func bind(_ source: String, at target: String) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try #require(mount(source, target, nil, UInt(MS_BIND), nil) == 0, "mount --bind: errno \(errno)")
    }

    @Test(
        "the database's folder bind-mounted from a folder inside a root: --check-config and start exit 78",
        .enabled(if: canBind, "bind mounts need root (CAP_SYS_ADMIN)"))
    func storeFolderInsideRoot() throws {
        let h = try DaemonHarness(start: false)
        let inRoot = h.root + "/st"
        let bound = h.dir + "/statebind"
        try FileManager.default.createDirectory(atPath: inRoot, withIntermediateDirectories: true)
        chmod(inRoot, 0o700)
        try bind(inRoot, at: bound)
        defer { umount2(h.dir + "/statebind", Int32(MNT_DETACH)) }
        try write(h, roots: [h.root], database: bound + "/assetd.sqlite")
        let r = try check(h.configPath)
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        for words in [
            "files.roots", "\(h.root) holds the database's folder \(bound) through a bind mount",
            "/proc/self/mountinfo", "put store.path outside every root",
        ] {
            #expect(r.stderr.contains(words), "\(words) in: \(r.stderr)")
        }
        let start = try runProcess(Binaries.assetd, ["--config", h.configPath], timeout: 60)
        #expect(start.status == 78, "\(start.stderr)")
        #expect(!h.exists(inRoot + "/assetd.sqlite"), "the database was made inside the root")
    }

    @Test(
        "a root that is a bind mount of a folder inside another root is refused, in either order",
        .enabled(if: canBind, "bind mounts need root (CAP_SYS_ADMIN)"))
    func rootInsideRoot() throws {
        let h = try DaemonHarness(start: false)
        let b = h.dir + "/b"
        let nested = h.root + "/n"
        try FileManager.default.createDirectory(atPath: h.root + "/sub/x", withIntermediateDirectories: true)
        try bind(h.root + "/sub", at: b)
        defer { umount2(h.dir + "/b", Int32(MNT_DETACH)) }
        // Nested as written, but the folder shown there is another one of the outer root.
        try bind(h.root + "/sub/x", at: nested)
        defer { umount2(h.root + "/n", Int32(MNT_DETACH)) }
        for (roots, inner, outer) in [
            ([h.root, b], b, h.root), ([b, h.root], b, h.root), ([h.root, nested], nested, h.root),
        ] {
            try write(h, roots: roots)
            let r = try check(h.configPath)
            #expect(r.status == 78, "\(roots): \(r.stdout)\(r.stderr)")
            let words = "\(inner) is, through a bind mount, inside \(outer)"
            #expect(r.stderr.contains(words) && r.stderr.contains("two paths"), "\(words) in: \(r.stderr)")
        }
    }

    @Test(
        "roots nested as written, one a mount point of its own, and a root bind-mounted from outside: accepted, and start",
        .enabled(if: canBind, "bind mounts need root (CAP_SYS_ADMIN)"))
    func plainLayoutsStart() throws {
        let h = try DaemonHarness(start: false)
        // A root of mode 0755: nested roots must be folders only root may rename.
        let outer = h.dir + "/outer"
        try FileManager.default.createDirectory(atPath: outer + "/sub", withIntermediateDirectories: true)
        chmod(outer, 0o755)
        try #require(Tmpfs.mount(outer + "/disk", mib: 1))
        defer { Tmpfs.unmount(h.dir + "/outer/disk") }
        chmod(outer + "/disk", 0o755)
        let elsewhere = h.dir + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try bind(elsewhere, at: h.dir + "/b")
        defer { umount2(h.dir + "/b", Int32(MNT_DETACH)) }
        try write(h, roots: [h.root, outer, outer + "/sub", outer + "/disk", h.dir + "/b"])
        let r = try check(h.configPath)
        #expect(r.status == 0, "\(r.stderr)")
        try h.start()
        #expect(h.stop() == 0)
    }

    @Test("a config file inside a root is refused: a client could have it unlinked")
    func configInsideRoot() throws {
        let h = try DaemonHarness(start: false)
        let inRoot = h.root + "/assetd.toml"
        try write(h, roots: [h.root], to: inRoot)
        let r = try check(inRoot)
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("\(h.root) holds the config file \(inRoot)"), "\(r.stderr)")
    }

    @Test(
        "a config file in a folder bind-mounted from inside a root is refused",
        .enabled(if: canBind, "bind mounts need root (CAP_SYS_ADMIN)"))
    func configThroughBindMount() throws {
        let h = try DaemonHarness(start: false)
        let etc = h.dir + "/etc"
        try FileManager.default.createDirectory(atPath: h.root + "/etc", withIntermediateDirectories: true)
        try bind(h.root + "/etc", at: etc)
        defer { umount2(h.dir + "/etc", Int32(MNT_DETACH)) }
        try write(h, roots: [h.root], to: etc + "/assetd.toml")
        let r = try check(etc + "/assetd.toml")
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(
            r.stderr.contains("\(h.root) holds the config file \(etc)/assetd.toml through a bind mount"), "\(r.stderr)")
    }

    @Test("the socket's folder inside a root is refused")
    func socketInsideRoot() throws {
        let h = try DaemonHarness(start: false)
        try write(h, roots: [h.root], socket: h.root + "/run/control.sock")
        let r = try check(h.configPath)
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("\(h.root) holds the control socket's folder \(h.root)/run"), "\(r.stderr)")
    }
}
