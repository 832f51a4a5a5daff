// verify against a root moved by copying (cp -a) and a root removed from the config, through
// the running daemon (assetd(8), "The unlink queue"): the copy's files are reported as not the
// ones registered, with a summary per root; `--repair --relearn` (admins only) adopts those of
// the registered size and mtime and no other name, so later deletes unlink them again; a
// root gone from files.roots is reported once with the count of files under it.

import AssetClient
import ControlProtocol
import Foundation
import Glibc
import JSON
import Testing

@Suite(.serialized) struct VerifyIdentityTests {
    /// A daemon holding `count` objects `c/k<i>`, each with its file `d/f<i>`, stopped, its root
    /// copied with cp -a and the copy renamed into place (the original kept aside), started again.
    private func copiedRoot(count: Int = 4) throws -> (DaemonHarness, [String]) {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        let c = try h.client()
        var paths = [String]()
        for i in 0..<count {
            let p = try h.makeFile("d/f\(i)", size: 100 + i)
            try c.putObject("c", "k\(i)", ["file": .string(p)])
            paths.append(p)
        }
        c.close()
        #expect(h.stop() == 0)
        let copy = try runProcess(
            "/bin/sh", ["-c", #"cp -a "$0" "$0.new" && mv "$0" "$0.old" && mv "$0.new" "$0""#, h.root])
        #expect(copy.status == 0, "\(copy.stderr)")
        // Writable by root alone: relearn adopts nothing below a folder others may write.
        #expect(chmod(h.root, 0o755) == 0)
        try h.start()
        return (h, paths)
    }

    private func problems(_ r: JSONValue, _ kind: String) -> [JSONValue] {
        (r["problems"]?.arrayValue ?? []).filter { $0["kind"] == .string(kind) }
    }

    @Test("a root copied into place: verify reports every file as identity_changed, with a summary for the root")
    func copiedRootReported() throws {
        let (h, paths) = try copiedRoot()
        let c = try h.client()
        let r = try c.call("verify")
        #expect(r["clean"] == false, "\(r.serialized())")
        let changed = problems(r, "identity_changed").compactMap { $0["subject"]?["path"]?.stringValue }
        #expect(Set(changed) == Set(paths), "\(r.serialized())")
        let summary = problems(r, "root_identity_changed")
        #expect(summary.count == 1 && summary.first?["subject"]?["path"] == .string(h.root), "\(r.serialized())")
        #expect(summary.first?["subject"]?["changed"] == 4 && summary.first?["subject"]?["checked"] == 4)
        // Listed first: a report cut at its limit still shows it.
        #expect(r["problems"]?.arrayValue?.first?["kind"] == "root_identity_changed")
        let cli = try h.assetctl("verify")
        #expect(cli.status == 1 && cli.stdout.contains("4 of 4 files under \(h.root)"), "\(cli.stdout)\(cli.stderr)")
        #expect(cli.stdout.contains("was the root copied"), "\(cli.stdout)")
        // A repair without relearn changes nothing of it.
        let repair = try c.call("verify", ["repair": true])
        #expect(repair["clean"] == false && problems(repair, "identity_changed").count == 4, "\(repair.serialized())")
    }

    @Test("relearn adopts the copied files of the registered size and mtime: a later delete unlinks them")
    func relearnAdopts() throws {
        let (h, paths) = try copiedRoot()
        let c = try h.client()
        let r = try c.call("verify", ["repair": true, "relearn": .string(h.root)])
        #expect(r["clean"] == true && r["repaired"] == 5, "\(r.serialized())")
        #expect(try c.call("verify")["clean"] == true)
        _ = try c.deleteObject("c", "k0")
        _ = try c.deleteObject("c", "k1")
        // The deletes' unlinks are due at once: the sweep runs them now, no waiting.
        _ = try c.call("sweep")
        #expect(try c.call("pending")["pending"] == [], "the queue was not emptied")
        #expect(!h.exists(paths[0]) && !h.exists(paths[1]), "relearned files kept after their deletes")
        #expect(h.exists(paths[2]) && h.exists(paths[3]))
        let stats = try c.call("stats")
        #expect(stats["counters"]?["skipped_identity_changed"] == 0, "\(stats.serialized())")
    }

    @Test("relearn refuses a file whose mtime or size differs, or that has another name; its delete keeps it")
    func relearnRefuses() throws {
        let (h, paths) = try copiedRoot()
        // Another file at k0's path, of its size but another mtime (one swapped in); k1's of
        // another size; k2's with a second name.
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, paths[0], &times, 0) == 0)
        try Data(repeating: 7, count: 3).write(to: URL(fileURLWithPath: paths[1]))
        #expect(link(paths[2], h.root + "/d/f2.link") == 0)
        let c = try h.client()
        let r = try c.call("verify", ["repair": true, "relearn": .string(h.root)])
        #expect(r["clean"] == false, "\(r.serialized())")
        let byPath = Dictionary(
            problems(r, "identity_changed").map { ($0["subject"]?["path"]?.stringValue ?? "", $0) },
            uniquingKeysWith: { a, _ in a })
        #expect(byPath[paths[0]]?["repaired"] == false, "\(r.serialized())")
        #expect(byPath[paths[0]]?["message"]?.stringValue?.contains("modification time") == true)
        #expect(byPath[paths[1]]?["repaired"] == false)
        #expect(byPath[paths[2]]?["repaired"] == false)
        #expect(byPath[paths[2]]?["message"]?.stringValue?.contains("other names") == true)
        #expect(byPath[paths[3]]?["repaired"] == true)
        _ = try c.deleteObject("c", "k0")
        // The deletes' unlinks are due at once: the sweep runs them now, no waiting.
        _ = try c.call("sweep")
        #expect(try c.call("pending")["pending"] == [], "the queue was not emptied")
        #expect(h.exists(paths[0]), "a file relearn refused was unlinked")
    }

    @Test("a non-admin cannot relearn")
    func relearnIsForAdmins() throws {
        guard Nobody.canSwitch else { return }
        let (h, _) = try copiedRoot(count: 2)
        let r = try h.assetctlAsNobody("verify", "--repair", "--relearn", h.root)
        #expect(r.status == 1 && r.stderr.contains("admin"), "\(r.stdout)\(r.stderr)")
        // Without repair, relearn is refused as a mistake, not ignored.
        let alone = try h.assetctl("verify", "--relearn", h.root)
        #expect(alone.status != 0, "\(alone.stdout)\(alone.stderr)")
        let c = try h.client()
        #expect(problems(try c.call("verify"), "identity_changed").count == 2, "nothing was relearned")
    }

    @Test("a root removed from files.roots: verify reports it once with the count of files under it")
    func removedRootReported() throws {
        let h = try DaemonHarness(start: false)
        let other = h.dir + "/other"
        try FileManager.default.createDirectory(atPath: other + "/a", withIntermediateDirectories: true)
        chmod(other, 0o777)
        let both = h.configText().replacingOccurrences(
            of: "roots = [\"\(h.root)\"]", with: "roots = [\"\(h.root)\", \"\(other)\"]")
        let twoRoots = h.dir + "/two-roots.toml"
        try both.write(toFile: twoRoots, atomically: true, encoding: .utf8)
        try h.start(arguments: ["--config", twoRoots])
        var c = try h.client()
        for i in 0..<3 {
            let p = other + (i == 0 ? "/f\(i)" : "/a/f\(i)")
            try Data(repeating: 1, count: 10).write(to: URL(fileURLWithPath: p))
            try c.putObject("c", "k\(i)", ["file": .string(p)])
        }
        try c.putObject("c", "kept", ["file": .string(try h.makeFile("kept"))])
        c.close()
        #expect(h.stop() == 0)
        try h.start()
        c = try h.client()
        for repair in [false, true] {
            let r = try c.call("verify", ["repair": .bool(repair)])
            #expect(r["clean"] == false, "\(r.serialized())")
            let unconfigured = problems(r, "root_unconfigured")
            #expect(unconfigured.count == 1, "\(r.serialized())")
            #expect(unconfigured.first?["subject"]?["path"] == .string(other))
            #expect(unconfigured.first?["subject"]?["files"] == 3)
        }
    }
}
