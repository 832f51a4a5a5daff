// What a client could have made or can lock at a root's marker never keeps assetd down
// (assetd(8), ROOTS): another user's process holding the marker locked, or a symlink, FIFO,
// directory or foreign file at its name, starts the daemon with the root unbound, and
// `verify --delete-orphans` is refused there until `--adopt-root`. The marker is never
// registered.

import AssetStore
import Foundation
import Glibc
import Testing

@Suite("root markers a client could have made or locked") struct RootMarkerTrustTests {
    private func marker(_ h: DaemonHarness) -> String { h.root + "/.assetd-root" }

    /// Gives `path` an mtime long past (older than any orphan grace).
    private func age(_ path: String) {
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    /// An aged orphan, and `verify --delete-orphans --force` refused with it kept.
    private func expectOrphansKept(_ h: DaemonHarness, _ name: String) throws {
        let junk = try h.makeFile(name)
        age(junk)
        let r = try h.assetctl("verify", "--delete-orphans", "--force")
        #expect(r.status != 0 && r.stderr.contains("refusing to delete orphans under \(h.root)"), "\(r.stderr)")
        #expect(h.exists(junk))
    }

    @Test(
        "another user's process holding the marker locked: start goes on, orphans are not deleted there",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func foreignHolder() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        #expect(h.stop() == 0)
        var st = stat()
        #expect(stat(marker(h), &st) == 0 && st.st_mode & 0o777 == 0o600, "mode \(String(st.st_mode, radix: 8))")
        // As an earlier version left it (0644): a client could open it and lock it. The
        // descriptor is handed to a process of nobody's, which holds a shared lock on it until
        // its stdin closes.
        chmod(marker(h), 0o644)
        let held = try #require(FileHandle(forReadingAtPath: marker(h)))
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        let script = """
            import fcntl, sys
            fcntl.flock(1, fcntl.LOCK_SH)
            sys.stderr.write("locked\\n"); sys.stderr.flush()
            sys.stdin.read()
            """
        holder.arguments = [
            "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", script,
        ]
        let input = Pipe(), signal = Pipe()
        holder.standardInput = input
        holder.standardOutput = held
        holder.standardError = signal
        try withDefaultSignalMask { try holder.run() }
        try held.close()
        defer {
            try? input.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        let said = String(decoding: signal.fileHandleForReading.availableData, as: UTF8.self)
        try #require(said.contains("locked"), "\(said)")
        try h.start()
        #expect(h.log.contains("ROOT NOT BOUND: \(h.root)"), "\(h.log)")
        #expect(h.log.contains("locked by pid \(holder.processIdentifier) (uid \(Nobody.uid))"), "\(h.log)")
        try expectOrphansKept(h, "junk")
        // --check-config reads the holder, locks nothing, and only warns.
        let check = try runProcess(Binaries.assetd, ["--config", h.configPath, "--check-config"])
        #expect(check.status == 0, "\(check.stderr)")
    }

    @Test("a symlink, FIFO, directory or foreign file at the marker's name: start goes on unbound")
    func plantedMarkers() throws {
        for kind in ["symlink", "fifo", "directory", "foreign"] {
            let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"", start: false)
            let target = h.dir + "/target"
            let text = "database 0123456789abcdef0123456789abcdef\nstore /elsewhere\n"
            try text.write(toFile: target, atomically: false, encoding: .utf8)
            switch kind {
            case "symlink": #expect(symlink(target, marker(h)) == 0)
            case "fifo": #expect(mkfifo(marker(h), 0o666) == 0)
            case "directory": #expect(mkdir(marker(h), 0o777) == 0)
            default:
                try text.write(toFile: marker(h), atomically: false, encoding: .utf8)
                #expect(chown(marker(h), Nobody.uid, Nobody.uid) == 0)
            }
            try h.start()
            #expect(h.log.contains("ROOT NOT BOUND: \(h.root)"), "\(kind): \(h.log)")
            try expectOrphansKept(h, "junk-\(kind)")
            #expect(h.stop() == 0)
            if kind == "directory" {
                let adopted = try runProcess(Binaries.assetd, ["--config", h.configPath, "--adopt-root", h.root])
                #expect(adopted.status == 78 && adopted.stderr.contains("remove that directory"), "\(adopted.stderr)")
                continue
            }
            // Adopted: the bad entry is replaced (a symlink's target untouched), orphans go.
            try h.start(arguments: ["--config", h.configPath, "--adopt-root", h.root])
            var st = stat()
            #expect(lstat(marker(h), &st) == 0 && st.st_mode & S_IFMT == S_IFREG && st.st_uid == geteuid(), "\(kind)")
            #expect((try? String(contentsOfFile: target, encoding: .utf8)) == text, "\(kind)")
            let r = try h.assetctl("verify", "--delete-orphans", "--force")
            #expect(r.status == 0, "\(kind): \(r.stderr)")
            #expect(!h.exists(h.root + "/junk-\(kind)"), "\(kind)")
        }
    }

    @Test("a put of the root's marker is refused")
    func putMarkerRefused() throws {
        let h = try DaemonHarness()
        let r = try h.assetctl("put", "c", "k", "--file", marker(h))
        #expect(r.status != 0 && r.stderr.contains("is a root's marker"), "\(r.stdout)\(r.stderr)")
        #expect(h.exists(marker(h)))
    }
}
