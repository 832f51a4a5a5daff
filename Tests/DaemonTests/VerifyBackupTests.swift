// verify, backup and vacuum through assetctl (SPEC §9): verify's exit status says whether
// problems remain, a backup is a database assetd can be started on, vacuum answers.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct VerifyBackupTests {
    @Test("verify exits 0 on a clean store, 1 while a registered file is missing, and 0 once --repair fixed it")
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
        let removed = try h.assetctl("verify", "--delete-orphans")
        #expect(removed.status == 0, "\(removed.stdout)\(removed.stderr)")
        #expect(!h.exists(orphan))
    }

    @Test("backup writes a database assetd can be started on; vacuum and checkpoint answer")
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

    @Test(
        "a non-admin may verify but not repair or delete orphans",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func nonAdminVerify() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        #expect(try h.assetctlAsNobody(["verify"]).status == 0)
        let repair = try h.assetctlAsNobody(["verify", "--repair"])
        #expect(repair.status == 1 && repair.stderr.contains("admin"), "\(repair.stderr)")
        #expect(try h.assetctlAsNobody(["verify", "--delete-orphans"]).status == 1)
    }
}
