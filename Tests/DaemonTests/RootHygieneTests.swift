// Roots as an operator meets them (assetd(8)): the embedded default root is a folder of
// assetd's own, created at start with a CACHEDIR.TAG; a configured root that is missing, not a
// folder, or a folder other programs share stops --check-config, start-up and assetctl --db
// with exit 78; verify --delete-orphans refuses an untagged root unless --force.

import AssetClient
@testable import AssetDaemon
@testable import AssetService
import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

/// A configured root that must be refused, and what the message must say.
struct BadRoot: CustomTestStringConvertible, Sendable {
    var label: String
    /// The root, given the harness's temp folder.
    var root: @Sendable (String) -> String
    /// Words of the reason.
    var reason: String
    /// Set up in the temp folder first: environment variables for assetd, symlinks.
    var prepare: @Sendable (String) throws -> [String: String] = { _ in [:] }
    var testDescription: String { label }
}

@Suite("roots") struct RootHygieneTests {
    static let badRoots: [BadRoot] = everyUser + (getuid() == 0 ? asRoot : [])

    static let everyUser: [BadRoot] = [
        BadRoot(label: "a root that does not exist", root: { $0 + "/bad/does-not-exist" }, reason: "does not exist"),
        BadRoot(label: "a root that is a file", root: { _ in "/etc/passwd" }, reason: "is not a folder"),
        BadRoot(label: "/tmp", root: { _ in "/tmp" }, reason: "a folder other programs share"),
        BadRoot(label: "/var/cache", root: { _ in "/var/cache" }, reason: "a folder other programs share"),
        BadRoot(label: "/var/tmp", root: { _ in "/var/tmp" }, reason: "a folder other programs share"),
        BadRoot(label: "/usr", root: { _ in "/usr" }, reason: "a folder other programs share"),
        BadRoot(label: "/etc", root: { _ in "/etc" }, reason: "a folder other programs share"),
        BadRoot(label: "a folder inside /etc", root: { _ in "/etc/ssl" }, reason: "is inside /etc"),
        BadRoot(label: "a folder inside /usr", root: { _ in "/usr/local/share" }, reason: "is inside /usr"),
        BadRoot(label: "a folder inside /proc", root: { _ in "/proc/sys" }, reason: "is inside /proc"),
        BadRoot(label: "a folder inside /sys", root: { _ in "/sys/kernel" }, reason: "is inside /sys"),
        BadRoot(
            label: "a folder that holds $XDG_RUNTIME_DIR", root: { $0 + "/parent" }, reason: "contains",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/parent/run", withIntermediateDirectories: true)
                return ["XDG_RUNTIME_DIR": dir + "/parent/run"]
            }),
        BadRoot(label: "/var/cache/../tmp", root: { _ in "/var/cache/../tmp" }, reason: "\"..\" is not allowed"),
        BadRoot(
            label: "a symlink to /tmp", root: { $0 + "/link" }, reason: "through a symlink",
            prepare: { dir in
                try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "/tmp")
                return [:]
            }),
        BadRoot(
            label: "$XDG_CACHE_HOME itself", root: { $0 + "/xdg-cache" }, reason: "a folder other programs share",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/xdg-cache", withIntermediateDirectories: true)
                return ["XDG_CACHE_HOME": dir + "/xdg-cache"]
            }),
        BadRoot(
            label: "the home folder", root: { $0 + "/home" }, reason: "a folder other programs share",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
                return ["HOME": dir + "/home"]
            }),
        // Whoever may rename a name on the way to a root may swap the root for a symlink to /etc.
        BadRoot(
            label: "a root in a folder others may write, without the sticky bit", root: { $0 + "/open/root" },
            reason: "/open is writable by its group or others (mode 777) without the sticky bit",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/open/root", withIntermediateDirectories: true)
                chmod(dir + "/open", 0o777)
                return [:]
            }),
        BadRoot(
            label: "a root through a symlink in a folder others may write", root: { $0 + "/drop/link" },
            reason: "/drop is writable by its group or others (mode 777)",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/real/root", withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: dir + "/drop", withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(
                    atPath: dir + "/drop/link", withDestinationPath: dir + "/real/root")
                chmod(dir + "/drop", 0o777)
                return [:]
            }),
    ]

    /// Cases that need chown(2), which fails (and would leave them passing for the wrong
    /// reason) unless the tests run as root.
    static let asRoot: [BadRoot] = [
        BadRoot(
            label: "a root in a folder another user owns", root: { $0 + "/alice/root" },
            reason: "/alice belongs to user 65534, who may rename what is in it",
            prepare: { dir in
                try FileManager.default.createDirectory(atPath: dir + "/alice/root", withIntermediateDirectories: true)
                #expect(chown(dir + "/alice", 65534, 65534) == 0)
                return [:]
            }),
        BadRoot(
            label: "a root another user owns in a sticky folder others may write", root: { $0 + "/sticky/root" },
            reason: "/sticky/root belongs to user 65534, who may rename it in the sticky folder",
            prepare: { dir in
                try FileManager.default.createDirectory(
                    atPath: dir + "/sticky/root", withIntermediateDirectories: true)
                #expect(chmod(dir + "/sticky", 0o1777) == 0 && chown(dir + "/sticky/root", 65534, 65534) == 0)
                return [:]
            }),
    ]

    @Test(
        "a bad configured root exits 78 naming it and why: --check-config, start-up and assetctl --db",
        arguments: badRoots)
    func badRoot(_ bad: BadRoot) throws {
        // A database for assetctl --db: made by a daemon on a good root, then stopped.
        let h = try DaemonHarness()
        #expect(h.stop() == 0)
        let root = bad.root(h.dir)
        let env = ProcessInfo.processInfo.environment.merging(try bad.prepare(h.dir)) { $1 }
        let text = h.configText().replacingOccurrences(of: "roots = [\"\(h.root)\"]", with: "roots = [\"\(root)\"]")
        try text.write(toFile: h.configPath, atomically: true, encoding: .utf8)
        let line =
            try #require(
                text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.hasPrefix("roots") }) + 1

        let check = try runProcess(Binaries.assetd, ["--config", h.configPath, "--check-config"], environment: env)
        #expect(check.status == 78, "\(check.stdout)\(check.stderr)")
        for words in ["\(h.configPath):\(line)", "files.roots", root, bad.reason] {
            #expect(check.stderr.contains(words), "\(words) in: \(check.stderr)")
        }
        let start = try runProcess(Binaries.assetd, ["--config", h.configPath], environment: env, timeout: 60)
        #expect(start.status == 78, "\(start.stderr)")
        #expect(start.stderr.contains(root) && start.stderr.contains(bad.reason), "\(start.stderr)")
        #expect(!h.exists(h.socket), "nothing started")
        let db = try runProcess(
            Binaries.assetctl, ["--db", h.database, "--config", h.configPath, "verify"], environment: env)
        #expect(db.status == 78, "\(db.stdout)\(db.stderr)")
        #expect(db.stderr.contains(root) && db.stderr.contains(bad.reason), "\(db.stderr)")
    }

    @Test("a configured root inside a temp folder, and a root below the home folder, are accepted")
    func goodRoots() throws {
        let h = try DaemonHarness(start: false)
        try FileManager.default.createDirectory(atPath: h.dir + "/home/cache/mine", withIntermediateDirectories: true)
        try h.configText().replacingOccurrences(
            of: "roots = [\"\(h.root)\"]", with: "roots = [\"\(h.root)\", \"\(h.dir)/home/cache/mine\"]"
        ).write(toFile: h.configPath, atomically: true, encoding: .utf8)
        let env = ProcessInfo.processInfo.environment.merging([
            "HOME": h.dir + "/home", "XDG_CACHE_HOME": h.dir + "/home/cache",
        ]) { $1 }
        let r = try runProcess(Binaries.assetd, ["--config", h.configPath, "--check-config"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!h.exists(h.root + "/CACHEDIR.TAG"), "a configured root is never tagged by assetd")
    }

    @Test("a root on a file system whose names ignore case (vfat, exfat, cifs, ...) is refused; ext4's is not")
    func caseFoldingFileSystem() throws {
        let h = try DaemonHarness(start: false)
        var c = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        c.roots = [h.root]
        c.rootsOrigin = .configured(line: 1)
        // statfs as it reads a vfat (MSDOS_SUPER_MAGIC) or an ext4 (EXT4_SUPER_MAGIC) root.
        do {
            _ = try c.prepareRoots(create: false, fileSystemType: { _ in 0x4d44 })
            Issue.record("a vfat root was accepted")
        } catch {
            #expect(error.description.contains("\(h.root) is on a vfat file system"), "\(error)")
        }
        _ = try c.prepareRoots(create: false, fileSystemType: { _ in 0xEF53 })
    }

    @Test("a root holding the database's folder is refused, through a symlink too; one beside it is not")
    func rootHoldingStore() throws {
        let h = try DaemonHarness(start: false)
        var c = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        c.roots = [h.root]
        c.rootsOrigin = .configured(line: 1)
        try FileManager.default.createDirectory(atPath: h.root + "/db", withIntermediateDirectories: true)
        // A folder whose name starts with a combining mark: as Strings, "/" and the mark are one character.
        try FileManager.default.createDirectory(atPath: h.root + "/\u{301}db", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: h.dir + "/dblink", withDestinationPath: h.root + "/db")
        // store.path itself a symlink, outside the root, to a database inside it.
        try FileManager.default.createSymbolicLink(
            atPath: h.dir + "/store.sqlite", withDestinationPath: h.root + "/db/assetd.sqlite")
        for store in [
            h.root + "/assetd.sqlite", h.root + "/db/assetd.sqlite", h.dir + "/dblink/assetd.sqlite",
            h.root + "/\u{301}db/assetd.sqlite", h.dir + "/store.sqlite",
        ] {
            c.storePath = store
            do {
                _ = try c.prepareRoots(create: false, fileSystemType: { _ in 0xEF53 })
                Issue.record("a root holding \(store) was accepted")
            } catch {
                #expect(error.description.contains("\(h.root) holds the database's folder"), "\(error)")
            }
        }
        c.storePath = h.dir + "/assetd.sqlite"
        _ = try c.prepareRoots(create: false, fileSystemType: { _ in 0xEF53 })
    }

    @Test("without /proc/self/mountinfo the roots are judged by path, with a warning that mounts are not")
    func noMountTableWarned() throws {
        let h = try DaemonHarness(start: false)
        var c = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        c.roots = [h.root]
        c.rootsOrigin = .configured(line: 1)
        c.storePath = h.dir + "/assetd.sqlite"
        let warned = try c.prepareRoots(create: false, fileSystemType: { _ in 0xEF53 }, mounts: { nil })
        #expect(warned.contains { $0.contains("/proc/self/mountinfo cannot be read") }, "\(warned)")
        let read = try c.prepareRoots(create: false, fileSystemType: { _ in 0xEF53 })
        #expect(!read.contains { $0.contains("mountinfo") }, "\(read)")
    }

    @Test("the default root is created with a CACHEDIR.TAG; --check-config creates nothing; an untagged one is tagged")
    func defaultRootInProcess() throws {
        let h = try DaemonHarness(start: false)
        let env = ["HOME": h.dir + "/home", "XDG_CACHE_HOME": h.dir + "/home/cache"]
        let c = DaemonConfig.embeddedDefaults(uid: 1000, environment: env)
        #expect(c.roots == [h.dir + "/home/cache/assetd"] && c.rootsOrigin == .embeddedDefault)
        try c.prepareRoots(create: false, uid: 1000, environment: env)
        #expect(!h.exists(h.dir + "/home"), "--check-config creates nothing")
        try c.prepareRoots(create: true, uid: 1000, environment: env)
        let tag = try String(contentsOfFile: c.roots[0] + "/CACHEDIR.TAG", encoding: .utf8)
        let lines = tag.split(separator: "\n").map(String.init)
        #expect(lines.first == "Signature: 8a477f597d28d172789f06886806bc55")
        #expect(lines.dropFirst().first == "# This file is a cache directory tag created by assetd.")
        #expect(lines.count >= 3 && lines.dropFirst(2).allSatisfy { $0.hasPrefix("#") })
        #expect(permissions(of: c.roots[0]) == 0o700, "a user's default root is the user's alone")
        #expect(unlink(c.roots[0] + "/CACHEDIR.TAG") == 0)
        try c.prepareRoots(create: true, uid: 1000, environment: env)
        #expect(
            CacheDirectoryTag.isPresent(in: c.roots[0]), "the default root is assetd's by name: tagged again at start")
        // Spelled out in a config file (etc/assetd.toml sets every key to its default), it is still assetd's.
        var spelled = c
        spelled.rootsOrigin = .configured(line: 1)
        try FileManager.default.removeItem(atPath: c.roots[0])
        try spelled.prepareRoots(create: true, uid: 1000, environment: env)
        #expect(CacheDirectoryTag.isPresent(in: c.roots[0]))
        var other = spelled
        other.roots = [h.dir + "/home/cache/other"]
        #expect(throws: RootsError.self) { try other.prepareRoots(create: true, uid: 1000, environment: env) }
        #expect(!h.exists(other.roots[0]), "a root of the admin's choosing is never created")
    }

    /// Starts assetd on its embedded defaults in `home` as a user other than root (nobody,
    /// when the test runs as root), with `environment` added; its output goes to the log file.
    private static func startUnprivileged(
        _ h: DaemonHarness, environment extra: [String: String] = [:]
    ) throws -> (process: Process, log: String, socket: String) {
        let home = h.dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        // Nobody's, when the test runs as root: a home others may write would let them replace
        // the root below it, and is refused.
        if getuid() == 0 { chown(home, Nobody.uid, Nobody.uid) }
        chmod(home, 0o755)
        let env = [
            "PATH": "/usr/bin:/bin", "HOME": home, "XDG_CONFIG_HOME": home + "/config",
            "XDG_STATE_HOME": home + "/state",
            "XDG_RUNTIME_DIR": home,
        ].merging(extra) { $1 }
        // As root the defaults are the system's (/var/cache/assetd): run as nobody instead.
        let (path, args) =
            getuid() == 0
            ? (
                "/usr/bin/setpriv",
                ["--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetd]
            )
            : (Binaries.assetd, [])
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        p.environment = env
        let log = h.dir + "/default.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = p.standardError
        try withDefaultSignalMask { try p.run() }
        return (p, log, home + "/assetd.sock")
    }

    /// Waits until assetd answers a ping on `socket` or has exited; true if it answers.
    private static func ready(_ p: Process, _ socket: String) -> Bool {
        eventually(timeout: 60) {
            guard p.isRunning, let c = try? ControlClient(socketPath: socket, timeout: 5) else { return !p.isRunning }
            defer { c.close() }
            return (try? c.call("ping")) != nil
        } && p.isRunning
    }

    @Test(
        "assetd on its embedded defaults creates its own root with a CACHEDIR.TAG and names it when a path is outside")
    func defaultRootAtStart() throws {
        guard getuid() != 0 || Nobody.canSwitch else { return }
        let h = try DaemonHarness(start: false)
        let (p, log, socket) = try Self.startUnprivileged(h)
        defer {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        let ready = Self.ready(p, socket)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try #require(ready, "not ready: \(output)")
        let root = h.dir + "/home/.cache/assetd"
        #expect(output.contains("files.roots = [\"\(root)\"]"), "\(output)")
        // The daemon's tag: nobody's when the test runs as root.
        #expect(CacheDirectoryTag.isPresent(in: root, owner: Nobody.uid), "tagged at start")
        let outside = try runProcess(
            Binaries.assetctl, ["--socket", socket, "put", "media", "trailer", "--file", h.dir + "/movie.mp4"])
        #expect(outside.status == 1)
        #expect(outside.stderr.contains("is not under a managed root (roots: \(root))"), "\(outside.stderr)")
    }

    @Test(
        "a default root the disk will not let assetd tag is a warning and assetd starts; one it cannot create exits 1, not 78"
    )
    func defaultRootRefusedByDisk() throws {
        guard getuid() != 0 || Nobody.canSwitch else { return }
        let h = try DaemonHarness(start: false)
        // A cache folder assetd's user may not write in (mode bits stop nobody, as a
        // read-only or full disk would stop root).
        let cache = h.dir + "/locked"
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        chmod(cache, 0o555)
        defer { chmod(cache, 0o755) }
        let env = ["XDG_CACHE_HOME": cache]

        let (p, log, _) = try Self.startUnprivileged(h, environment: env)
        p.waitUntilExit()
        let refused = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(p.terminationStatus == 1, "before: 78, which systemd does not restart: \(refused)")
        #expect(
            refused.contains("the default root \(cache)/assetd cannot be created: mkdir \(cache)/assetd"), "\(refused)")

        // The root exists (made by the admin, or before the disk filled) but cannot be tagged.
        try FileManager.default.createDirectory(atPath: cache + "/assetd", withIntermediateDirectories: true)
        chmod(cache + "/assetd", 0o555)
        let (q, qlog, socket) = try Self.startUnprivileged(h, environment: env)
        defer {
            kill(q.processIdentifier, SIGTERM)
            q.waitUntilExit()
        }
        let ready = Self.ready(q, socket)
        let output = (try? String(contentsOfFile: qlog, encoding: .utf8)) ?? ""
        try #require(ready, "not ready (before: exit 78): \(output)")
        #expect(
            output.contains("warning") && output.contains("the default root \(cache)/assetd cannot be tagged"),
            "\(output)")
        #expect(!CacheDirectoryTag.isPresent(in: cache + "/assetd"))
    }

    @Test(
        "on a full disk the default root is made and left untagged with a warning; on a read-only one it is unavailable, not a config error",
        .enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
    func defaultRootOnFullOrReadOnlyDisk() throws {
        let h = try DaemonHarness(start: false)
        let cache = h.dir + "/cache"
        try #require(Tmpfs.mount(cache, mib: 1))
        defer { Tmpfs.unmount(cache) }
        Tmpfs.fill(cache + "/filler")
        let env = ["HOME": h.dir + "/home", "XDG_CACHE_HOME": cache]
        let c = DaemonConfig.embeddedDefaults(uid: 1000, environment: env)
        let warnings = try c.prepareRoots(create: true, uid: 1000, environment: env)
        #expect(
            warnings.count == 1 && warnings[0].contains("the default root \(cache)/assetd cannot be tagged"),
            "\(warnings)")
        #expect(h.exists(cache + "/assetd") && !CacheDirectoryTag.isPresent(in: cache + "/assetd"))

        #expect(mount("none", cache, nil, UInt(MS_REMOUNT | MS_RDONLY), nil) == 0, "remount: errno \(errno)")
        let elsewhere = ["HOME": h.dir + "/home", "XDG_CACHE_HOME": cache + "/sub"]
        do {
            try DaemonConfig.embeddedDefaults(uid: 1000, environment: elsewhere).prepareRoots(
                create: true, uid: 1000, environment: elsewhere)
            Issue.record("a read-only disk let the default root be created")
        } catch {
            guard case .unavailable(let message) = error else { return #expect(Bool(false), "\(error)") }
            #expect(message.contains("mkdir \(cache)/sub") && error.exitStatus == 1, "\(message)")
        }
    }

    /// The passwd homes (uid 990 is the user assetd runs as) and whether the root
    /// /srv/assetd is refused.
    struct HomeCase: Sendable, CustomTestStringConvertible {
        var homes: [UInt32: String]
        var refused: Bool
        var testDescription: String { "\(homes.sorted { $0.key < $1.key }) refused: \(refused)" }
    }

    @Test(
        "the home of the user assetd runs as may be its root or inside it; another user's home may not",
        arguments: [
            HomeCase(homes: [990: "/srv/assetd"], refused: false),
            HomeCase(homes: [990: "/srv/assetd/home"], refused: false),
            HomeCase(homes: [991: "/srv/assetd"], refused: true),
            HomeCase(homes: [990: "/srv/assetd", 991: "/srv/assetd"], refused: true),
            HomeCase(homes: [991: "/srv/assetd/home"], refused: true),
        ])
    func ownHomeIsNotShared(_ c: HomeCase) {
        let root = "/srv/assetd"
        // $HOME as systemd sets it for User=: the passwd home of the daemon's user.
        let env = ["HOME": c.homes[990] ?? "/nonexistent"]
        let shared = RootHygiene.sharedFolders(
            uid: 990, environment: env, roots: [root], homes: c.homes.map { (uid: $0.key, home: $0.value) })
        let why = RootHygiene.sharing(root, shared)
        #expect((why != nil) == c.refused, "\(why ?? "accepted")")
    }

    @Test(
        "verify --delete-orphans refuses an untagged root naming it (exit 1); --orphans lists; --force and the tag delete"
    )
    func deleteOrphansNeedsTag() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        let first = try h.makeFile("a.bin"), second = try h.makeFile("b.bin")
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, first, &times, 0)
        utimensat(AT_FDCWD, second, &times, 0)
        let refused = try h.assetctl("verify", "--delete-orphans")
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        for words in [h.root, "CACHEDIR.TAG", "--force"] {
            #expect(refused.stderr.contains(words), "\(words): \(refused.stderr)")
        }
        #expect(h.exists(first) && h.exists(second))
        let listed = try h.assetctl("verify", "--orphans")
        #expect(
            listed.status == 1 && listed.stdout.contains(first) && listed.stdout.contains(second), "\(listed.stdout)")
        #expect(try h.assetctl("verify", "--force").status == 64, "--force goes with --delete-orphans")

        let forced = try h.assetctl("verify", "--delete-orphans", "--force")
        #expect(forced.status == 0, "\(forced.stdout)\(forced.stderr)")
        #expect(!h.exists(first) && !h.exists(second))

        // assetctl --db, once the daemon is gone, refuses the same way.
        let third = try h.makeFile("c.bin")
        utimensat(AT_FDCWD, third, &times, 0)
        #expect(h.stop() == 0)
        let db = ["--db", h.database, "--config", h.configPath, "verify", "--delete-orphans"]
        let dbRefused = try runProcess(Binaries.assetctl, db)
        #expect(dbRefused.status == 1 && dbRefused.stderr.contains(h.root), "\(dbRefused.stdout)\(dbRefused.stderr)")
        #expect(h.exists(third))
        #expect(CacheDirectoryTag.write(in: h.root) == nil)
        let tagged = try runProcess(Binaries.assetctl, db)
        #expect(tagged.status == 0, "\(tagged.stdout)\(tagged.stderr)")
        #expect(!h.exists(third) && h.exists(h.root + "/CACHEDIR.TAG"))
    }
}
