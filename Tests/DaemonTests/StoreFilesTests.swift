// The files beside a database (assetd(8), FILES): a database has one name, so its lock is the
// only one; the files root's `assetctl --db` creates beside another user's database are that
// user's, so a daemon running as that user can still open them.

import AssetService
import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

@Suite struct StoreFilesTests {
    @Test("assetctl --db refuses a hard link to a database a running store holds; so does a store's open")
    func hardLinkRefused() throws {
        let f = try Fixture()
        try f.put([(ref("c", "o"), ["n": 1])])
        let alias = f.dir + "/state/alias.sqlite"
        #expect(link(f.dbPath, alias) == 0)
        let config = try BackupRestoreTests.config(f)
        // The link's lock is another name: without the check this opened read-write, unlocked.
        let r = try runProcess(Binaries.assetctl, ["--db", alias, "--config", config, "stats"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("2 names (hard links)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: alias + "-wal"))

        // Nor does the store open by its own name while the other name is there.
        f.store.close()
        let e = expectCode(.conflict) { try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(e?.message.contains("hard links") == true, "\(String(describing: e))")
        #expect(unlink(alias) == 0)
        try f.reopen()
        #expect(try f.exists(ref("c", "o")))
    }

    @Test("assetctl --db through a symlink to a database an open store holds meets that store's lock")
    func symlinkMeetsTheLock() throws {
        let f = try Fixture()
        try f.put([(ref("c", "o"), ["n": 1])])
        let alias = f.dir + "/live.sqlite"
        #expect(symlink(f.dbPath, alias) == 0)
        let config = try BackupRestoreTests.config(f)
        // By the symlink's name the lock was live.sqlite.lock, which nobody held: a sweep ran.
        let r = try runProcess(Binaries.assetctl, ["--db", alias, "--config", config, "sweep"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        // Held by this test's store, which names no holder: not skipped as another --db run.
        #expect(r.stderr.contains("another process (pid \(getpid())) holds this database"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: alias + ".lock"))
    }

    @Test("a lock file with another name (a hard link) is refused, not truncated")
    func hardLinkedLockRefused() throws {
        let f = try Fixture()
        f.store.close()
        let victim = f.dir + "/victim"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        #expect(unlink(f.dbPath + ".lock") == 0)
        #expect(link(victim, f.dbPath + ".lock") == 0)
        let e = expectCode(.permissionDenied) { try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(e?.message.contains("hard links") == true, "\(String(describing: e))")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(unlink(f.dbPath + ".lock") == 0)
        try f.reopen()
    }

    @Test(
        "root's --db on another user's store leaves only files that user owns, so it can open them again",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func rootLeavesFilesToOwner() throws {
        let f = try Fixture()
        try f.put([(ref("c", "o"), ["n": 1])])
        f.store.close()
        // As a daemon running as that user leaves its state folder: everything its own, and
        // no lock yet (a store restored from a copy, or made before the lock was).
        let state = f.dir + "/state"
        #expect(unlink(f.dbPath + ".lock") == 0)
        // The ballast too, so that root's open creates one (when there is room for it).
        #expect(unlink(f.dbPath + ".ballast") == 0)
        #expect(chmod(f.dir, 0o755) == 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: state) + [""] {
            #expect(chown(state + "/" + name, Nobody.uid, Nobody.uid) == 0)
        }
        let config = try BackupRestoreTests.config(f)
        #expect(chmod(config, 0o644) == 0)

        let local = try LocalInvoker(databasePath: f.dbPath, configPath: config)
        _ = try local.call("object.put", ["collection": "c", "key": "p", "value": ["n": 2]])
        let whileOpen = try owners(state)
        local.close()
        for (name, uid) in try whileOpen.merging(owners(state), uniquingKeysWith: { a, _ in a }) {
            #expect(uid == Nobody.uid, "\(name) is uid \(uid)'s")
        }
        #expect(whileOpen[".lock"] != nil, "\(whileOpen)")
        var space = statvfs()
        if statvfs(state, &space) == 0, UInt64(space.f_bavail) * UInt64(space.f_frsize) > 2 * 8 << 20 {
            #expect(whileOpen[".ballast"] != nil, "\(whileOpen)")
        }

        let again = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetctl,
                "--db", f.dbPath, "--config", config, "put", "c", "q", #"{"n":3}"#,
            ])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
    }

    /// The owner of each file in `folder`, by the part of its name after the database's.
    private func owners(_ folder: String) throws -> [String: UInt32] {
        var result: [String: UInt32] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            var st = stat()
            guard lstat(folder + "/" + name, &st) == 0 else { continue }
            result[String(name.dropFirst("assetd.sqlite".count))] = st.st_uid
        }
        return result
    }
}
