// verify, backup and vacuum through assetctl (assetctl(1), COMMANDS and EXIT STATUS):
// verify's exit status says whether problems remain, a backup is a database --db reads
// (assetd starts on it once restored: BackupRestoreTests), vacuum answers.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct VerifyBackupTests {
    @Test("verify exits 0 on a clean store, 1 while a registered file is missing (1 problem), and 0 once repaired")
    func verifyExitStatus() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let file = try h.makeFile("v.bin")
        try c.putObject("media", "v", ["file": .string(file)])
        let clean = try h.assetctl("verify")
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        unlink(file)
        let broken = try h.assetctl("verify")
        #expect(broken.status == 1, "\(broken.stdout)\(broken.stderr)")
        #expect(broken.stdout.contains(file) || broken.stdout.contains("media"), "\(broken.stdout)")
        #expect(broken.stdout.hasSuffix("\n1 problem found, 0 repaired; problems remain\n"), "\(broken.stdout)")
        let json = try h.assetctl("--json", "verify")
        #expect(json.status == 1)
        #expect(try JSONValue.parse(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["clean"] == false)
        let repaired = try h.assetctl("verify", "--repair")
        #expect(repaired.status == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(try h.assetctl("verify").status == 0)
    }

    @Test("verify --orphans reports an old unregistered file; --delete-orphans removes it")
    func orphans() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        let orphan = try h.makeFile("orphan.bin")
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, orphan, &times, 0)
        #expect(try h.assetctl("verify").status == 0, "orphans only when asked")
        let found = try h.assetctl("verify", "--orphans")
        #expect(found.status == 1 && found.stdout.contains(orphan), "\(found.stdout)\(found.stderr)")
        #expect(CacheDirectoryTag.write(in: h.root) == nil, "the root is tagged as assetd tags a root it creates")
        let removed = try h.assetctl("verify", "--delete-orphans")
        #expect(removed.status == 0, "\(removed.stdout)\(removed.stderr)")
        #expect(!h.exists(orphan))
    }

    @Test("backup writes a database --db reads; vacuum and checkpoint answer")
    func backupVacuum() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 0..<20 { try c.putObject("b", "k\(i)", ["i": .int(Int64(i))]) }
        let copy = h.dir + "/backup.sqlite"
        let b = try h.assetctl("backup", copy)
        #expect(b.status == 0, "\(b.stdout)\(b.stderr)")
        #expect(try h.assetctl("vacuum").status == 0)
        let other = try runProcess(Binaries.assetctl, ["--db", copy, "--config", h.configPath, "--json", "stats"])
        #expect(other.status == 0, "\(other.stderr)")
        #expect(try JSONValue.parse(other.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["objects"] == 20)
    }

    @Test("backup into a folder that does not exist says why, exit 1")
    func backupMissingFolder() throws {
        let h = try DaemonHarness()
        let target = h.dir + "/no/such/backup.sqlite"
        let r = try h.assetctl("backup", target)
        #expect(r.status == 1)
        #expect(
            r.stderr == "assetctl: cannot create a file in \(h.dir)/no/such: ENOENT (No such file or directory)\n",
            "\(r.stderr)")
    }

    @Test("every job of etc/cron.d/assetd exits 0 as written, run twice as cron does week after week")
    func cronJobs() throws {
        let h = try DaemonHarness()
        try h.client().putObject("media", "c", ["file": .string(try h.makeFile("c.bin"))])
        let cron = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("etc/cron.d/assetd").path
        let jobs = try String(contentsOfFile: cron, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") && $0.contains("\t") }
            .map { $0.split(separator: "\t", maxSplits: 2) }
        #expect(jobs.count >= 6 && jobs.allSatisfy { $0.count == 3 && $0[1] == "root" }, "\(jobs)")
        // The system's folders become the test's; logger becomes a sink (no syslog here).
        let shims = h.dir + "/shims"
        try FileManager.default.createDirectory(atPath: shims, withIntermediateDirectories: true)
        try "#!/bin/sh\ncat >/dev/null\n".write(toFile: shims + "/logger", atomically: true, encoding: .utf8)
        chmod(shims + "/logger", 0o755)
        let environment = ["PATH": "\(shims):\(Binaries.directory):/usr/bin:/bin", "ASSETD_SOCKET": h.socket]
        for round in 1...2 {
            for job in jobs {
                // cron turns % into a newline, and \% into %.
                #expect(job[2].firstRange(of: #/(^|[^\\])%/#) == nil, "an unescaped %: \(job[2])")
                let command = job[2].replacingOccurrences(of: "/var/lib/node_exporter", with: h.dir)
                    .replacingOccurrences(of: "/var/lib/assetd", with: h.dir)
                    .replacingOccurrences(of: "\\%", with: "%")
                let r = try runProcess("/bin/sh", ["-c", command], environment: environment, timeout: 60)
                #expect(r.status == 0, "round \(round): \(command): \(r.stderr)")
            }
        }
        let restored = try runProcess(
            Binaries.assetctl, ["--db", h.dir + "/backup.sqlite", "--config", h.configPath, "--json", "stats"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try JSONValue.parse(restored.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["objects"] == 1)
        #expect(h.exists(h.dir + "/assetd.prom") && h.exists(h.dir + "/stats.json"))
        let stats = try String(contentsOfFile: h.dir + "/stats.json", encoding: .utf8)
        #expect(try JSONValue.parse(stats.trimmingCharacters(in: .whitespacesAndNewlines))["objects"] == 1)
    }

    @Test(
        "a non-admin may verify but not repair, list orphans (the walk reads every folder) or delete them",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func nonAdminVerify() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        #expect(try h.assetctlAsNobody(["verify"]).status == 0)
        let repair = try h.assetctlAsNobody(["verify", "--repair"])
        #expect(repair.status == 1 && repair.stderr.contains("admin"), "\(repair.stderr)")
        #expect(try h.assetctlAsNobody(["verify", "--delete-orphans"]).status == 1)
        let orphans = try h.assetctlAsNobody(["verify", "--orphans"])
        #expect(orphans.status == 1 && orphans.stderr.contains("admin"), "\(orphans.stdout)\(orphans.stderr)")
    }
}
