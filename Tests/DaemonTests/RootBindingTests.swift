// One database per root (assetd(8), ROOTS): a second daemon on a root another one serves is
// refused, and so is a database that is not the one a root's marker names (store.path changed
// without moving the database); a new one over a root full of files it never saw starts with
// the root unbound; an
// upgraded deployment (no marker, no database id) starts and gets its marker, and the marker
// is never an orphan.

import AssetStore
import Foundation
import GRDB
import Glibc
import Testing

@Suite("roots bound to one database") struct RootBindingTests {
    private func marker(_ h: DaemonHarness) -> String { h.root + "/.assetd-root" }

    /// The marker's text, "" if there is none.
    private func markerText(_ h: DaemonHarness) -> String {
        (try? String(contentsOfFile: marker(h), encoding: .utf8)) ?? ""
    }

    /// `assetd --config config` with `extra` arguments, to its exit (a refusal ends it at once).
    private func startOnce(_ config: String, _ extra: [String] = []) throws -> ProcessResult {
        try runProcess(Binaries.assetd, ["--config", config] + extra, timeout: 60)
    }

    /// Gives `path` an mtime long past (older than any orphan grace).
    private func age(_ path: String) {
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, path, &times, 0)
    }

    @Test("a second daemon (another database, a copied config) on a root another one serves exits 78")
    func secondDaemonRefused() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        chmod(h.root, 0o1777)  // a cache root as shipped: no client moves another's entry there
        let held = try h.makeFile("held-by-first")
        #expect(try h.assetctl("put", "c", "k", "--file", held).status == 0)
        age(held)
        let second = h.dir + "/second.toml"
        try h.configText(socket: h.dir + "/run/second.sock", database: h.dir + "/state2/assetd.sqlite")
            .write(toFile: second, atomically: true, encoding: .utf8)
        let r = try startOnce(second)
        #expect(r.status == 78, "\(r.stderr)")
        let pid = h.process.map { "pid \($0.processIdentifier)" } ?? "?"
        for words in ["root \(h.root) is served by another assetd (\(pid))", h.database, "files.roots"] {
            #expect(r.stderr.contains(words), "\(words) in: \(r.stderr)")
        }
        #expect(!h.exists(h.dir + "/run/second.sock"), "the second daemon served")
        #expect(h.exists(held))
        #expect(try h.assetctl("verify").status == 0)
        // Its --check-config sees the same.
        let check = try startOnce(second, ["--check-config"])
        #expect(check.status == 78 && check.stderr.contains("is served by another assetd (\(pid))"), "\(check.stderr)")
        // Stopped, the first no longer holds the root, which is still its database's.
        #expect(h.stop() == 0)
        let after = try startOnce(second)
        #expect(after.status == 78 && after.stderr.contains("is bound to another database"), "\(after.stderr)")
        #expect(h.exists(held))
    }

    @Test("in a top folder any user may change (0777, no sticky bit) another's marker only unbinds the root")
    func unguardedTopUnbinds() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")  // its root is 0777
        let held = try h.makeFile("held-by-first")
        #expect(try h.assetctl("put", "c", "k", "--file", held).status == 0)
        #expect(h.stop() == 0)
        // A client's rename could have put any root-owned file at the name: it never stops a start.
        let second = h.dir + "/second.toml"
        try h.configText(socket: h.dir + "/run/second.sock", database: h.dir + "/state2/assetd.sqlite")
            .write(toFile: second, atomically: true, encoding: .utf8)
        let check = try startOnce(second, ["--check-config"])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stderr.contains("would start unbound") && check.stderr.contains("sticky"), "\(check.stderr)")
        chmod(h.root, 0o1777)
        #expect(try startOnce(second, ["--check-config"]).status == 78, "guarded: refused as before")
        #expect(h.exists(held))
    }

    @Test("store.path changed without moving the database: start and --check-config exit 78; --adopt-root binds")
    func storePathMoved() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        chmod(h.root, 0o1777)
        var files = [String]()
        for i in 1...3 {
            let f = try h.makeFile("f\(i)")
            #expect(try h.assetctl("put", "c", "k\(i)", "--file", f).status == 0)
            age(f)
            files.append(f)
        }
        #expect(h.stop() == 0)
        let old = markerText(h)
        #expect(old.contains("store \(h.database)"), "\(old)")
        let moved = h.dir + "/newdisk/assetd.sqlite"
        try h.configText(database: moved).write(toFile: h.configPath, atomically: true, encoding: .utf8)
        for extra in [["--check-config"], []] {
            let r = try startOnce(h.configPath, extra)
            #expect(r.status == 78, "\(extra): \(r.stderr)")
            for words in ["root \(h.root) is bound to another database", "store.path \(h.database) when bound"] {
                #expect(r.stderr.contains(words), "\(extra): \(words) in: \(r.stderr)")
            }
            if extra.isEmpty { #expect(r.stderr.contains("--adopt-root \(h.root)"), "\(r.stderr)") }
        }
        #expect(files.allSatisfy(h.exists))
        #expect(markerText(h) == old, "a refused start changed the marker")
        #expect(!h.exists(moved), "a refused start left an empty database")
        // Deliberately: the root is this database's from now on.
        try h.start(arguments: ["--config", h.configPath, "--adopt-root", h.root])
        #expect(markerText(h).contains("store \(moved)"), "\(markerText(h))")
        #expect(files.allSatisfy(h.exists))
        #expect(h.stop() == 0)
        let again = try startOnce(h.configPath, ["--check-config"])
        #expect(again.status == 0, "\(again.stderr)")
        let typo = try startOnce(h.configPath, ["--adopt-root", h.dir + "/elsewhere"])
        #expect(typo.status == 64 && typo.stderr.contains("not one of files.roots"), "\(typo.stderr)")
    }

    @Test("a new database over an unmarked root full of files starts unbound: orphans kept until --adopt-root")
    func newDatabaseOverFiles() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"", start: false)
        let f = try h.makeFile("old/f1")
        age(f)
        let check = try startOnce(h.configPath, ["--check-config"])
        #expect(check.status == 0 && check.stderr.contains("root \(h.root) would start unbound"), "\(check.stderr)")
        try h.start()
        #expect(h.log.contains("ROOT NOT BOUND: \(h.root): it holds files but no .assetd-root"), "\(h.log)")
        let refused = try h.assetctl("verify", "--delete-orphans", "--force")
        let words = "refusing to delete orphans under \(h.root)"
        #expect(refused.status != 0 && refused.stderr.contains(words), "\(refused.stderr)")
        #expect(h.exists(f) && !h.exists(marker(h)))
        #expect(h.stop() == 0)
        try h.start(arguments: ["--config", h.configPath, "--adopt-root", h.root])
        #expect(markerText(h).contains("database "), "\(markerText(h))")
        #expect(h.stop() == 0)
        try h.start()  // bound now: the next start needs no flag
        #expect(try h.assetctl("verify", "--delete-orphans", "--force").status == 0)
        #expect(!h.exists(f))
    }

    @Test("an upgrade: a database without an id and a root without a marker start, and the root gets its marker")
    func upgradeGetsMarker() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        chmod(h.root, 0o1777)
        let f = try h.makeFile("kept")
        #expect(try h.assetctl("put", "c", "k", "--file", f).status == 0)
        age(f)
        #expect(h.stop() == 0)
        // As an older assetd left them.
        let queue = try DatabaseQueue(path: h.database)
        try queue.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'database_id'") }
        try queue.close()
        unlink(marker(h))
        try h.start()
        let text = markerText(h)
        #expect(text.contains("database ") && text.contains("store \(h.database)"), "\(text)")
        #expect(!h.log.contains("is not bound"), "\(h.log)")
        // Bound for good: a copied config with another database is refused.
        let second = h.dir + "/second.toml"
        try h.configText(socket: h.dir + "/run/second.sock", database: h.dir + "/state2/assetd.sqlite")
            .write(toFile: second, atomically: true, encoding: .utf8)
        #expect(try startOnce(second).status == 78)
        #expect(h.exists(f))
    }

    @Test("the marker is never an orphan: verify --delete-orphans --force keeps it and removes the rest")
    func markerNotOrphan() throws {
        let h = try DaemonHarness(filesSection: "orphan_grace = \"0s\"")
        let junk = try h.makeFile("junk")
        age(junk)
        age(marker(h))
        let listed = try h.assetctl("--json", "verify", "--orphans")
        #expect(!listed.stdout.contains(".assetd-root"), "\(listed.stdout)")
        #expect(listed.stdout.contains(junk), "\(listed.stdout)")
        let r = try h.assetctl("verify", "--delete-orphans", "--force")
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(!h.exists(junk) && h.exists(marker(h)))
        // A marker removed since start: orphans are no longer deleted there, even with --force.
        unlink(marker(h))
        let junk2 = try h.makeFile("junk2")
        age(junk2)
        let refused = try h.assetctl("verify", "--delete-orphans", "--force")
        #expect(refused.status != 0 && refused.stderr.contains("was removed or replaced"), "\(refused.stderr)")
        #expect(h.exists(junk2))
    }
}
