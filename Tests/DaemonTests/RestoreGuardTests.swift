// The restore's guards (assetctl(1), restore; assetd(8), Backups): `--db` never makes a
// database of an empty file, a restore refuses what is no backup of this config's store, a copy
// put in place beside another database's WAL is refused while still intact, a look at a backup
// leaves it as it is, and a restored store holds what the copy cannot judge.

import AssetStoreTestSupport
import ControlProtocol
import JSON
import Foundation
import Testing

@Suite struct RestoreGuardTests {
    func ctl(_ args: [String]) throws -> ProcessResult { try runProcess(Binaries.assetctl, args) }

    func size(_ path: String) -> Int64? {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : nil
    }

    /// The two header bytes SQLite keeps the journal mode in (1 1: rollback, 2 2: WAL).
    func journalHeader(_ path: String) throws -> [UInt8] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return Array(data[18...19])
    }

    /// Puts `database`'s copy `copy` in place as assetctl(1) says (the -wal and -shm removed).
    func putInPlace(_ copy: String, _ h: DaemonHarness) throws {
        for suffix in ["-wal", "-shm"] { unlink(h.database + suffix) }
        try Data(contentsOf: URL(fileURLWithPath: copy)).write(to: URL(fileURLWithPath: h.database))
    }

    @Test("--db never gives an empty file a schema; restore refuses a file that is no marked copy")
    func emptyAndUnmarked() throws {
        let h = try DaemonHarness()
        try h.client().putObject("c", "a")
        #expect(h.stop() == 0)
        let empty = h.dir + "/state/empty.sqlite"
        #expect(FileManager.default.createFile(atPath: empty, contents: nil))
        for args in [["restore"], ["ls", "c"]] {
            let r = try ctl(["--db", empty, "--config", h.configPath] + args)
            #expect(r.status != 0 && r.stderr.contains("not an assetd database"), "\(r.stdout)\(r.stderr)")
            #expect(size(empty) == 0, "a schema was written into the empty file")
            #expect(size(empty + "-wal") == nil && size(empty + ".ballast") == nil)
        }
        // An empty file with a -wal beside it (a cp cut short beside a crash's log): the log is
        // left as it is (an open would have had SQLite drop it).
        let wal = Data(repeating: 7, count: 4096)
        try wal.write(to: URL(fileURLWithPath: empty + "-wal"))
        for args in [["restore"], ["ls", "c"]] {
            let r = try ctl(["--db", empty, "--config", h.configPath] + args)
            #expect(r.status != 0 && r.stderr.contains("not an assetd database"), "\(r.stdout)\(r.stderr)")
            #expect(size(empty) == 0 && size(empty + "-wal") == 4096, "\(args)")
        }
        let live = try ctl(["--db", h.database, "--config", h.configPath, "restore"])
        #expect(live.status != 0 && live.stderr.contains("not a backup copy"), "\(live.stdout)\(live.stderr)")
        let forced = try ctl(["--db", h.database, "--config", h.configPath, "restore", "--force"])
        #expect(forced.status == 0 && forced.stdout.hasPrefix("restored"), "\(forced.stdout)\(forced.stderr)")
    }

    @Test("a copy made with cp put back beside the WAL a crash left is refused (78) and left as it was")
    func cpCopyBesideCrashWAL() throws {
        let h = try DaemonHarness()
        let pad = JSONValue.string(String(repeating: "x", count: 300))
        var c = try h.client()
        for i in 1...40 { try c.putObject("c", "a\(i)", ["pad": pad]) }
        #expect(h.stop() == 0)
        let old = h.dir + "/old.sqlite"
        try FileManager.default.copyItem(atPath: h.database, toPath: old)
        try h.start()
        c = try h.client()
        for i in 1...20 { try c.deleteObject("c", "a\(i)") }
        for i in 1...40 { try c.putObject("c", "b\(i)", ["pad": .string(String(repeating: "y", count: 300))]) }
        let checkpoint = try h.assetctl("checkpoint")
        #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
        for i in 1...10 { try c.deleteObject("c", "b\(i)") }
        for i in 1...10 { try c.putObject("c", "n\(i)", ["pad": pad]) }
        h.stop(signal: SIGKILL)
        #expect((size(h.database + "-wal") ?? 0) > 0, "the crash left its WAL")
        let copied = try Data(contentsOf: URL(fileURLWithPath: old))
        try copied.write(to: URL(fileURLWithPath: h.database))  // the -wal forgotten

        let start = try runAssetd(["--config", h.configPath])
        #expect(start.status == 78, "\(start.stderr)")
        #expect(start.stderr.contains("quick_check"), "\(start.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: h.database)) == copied, "the foreign frames were written in")
    }

    @Test("a look at a backup with --db leaves it in rollback mode, so beside a crash's WAL it is still refused")
    func lookLeavesBackupAsItIs() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 1...5 { try c.putObject("c", "a\(i)") }
        let backup = h.dir + "/backup.sqlite"
        #expect(try h.assetctl("backup", backup).status == 0)
        for i in 1...5 { try c.putObject("c", "n\(i)") }
        h.stop(signal: SIGKILL)
        #expect((size(h.database + "-wal") ?? 0) > 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: backup))
        let look = try ctl(["--db", backup, "--config", h.configPath, "ls", "c"])
        #expect(look.status == 0 && look.stdout.contains("a5") && !look.stdout.contains("n1"), "\(look.stderr)")
        #expect(try journalHeader(backup) == [1, 1])
        #expect(try Data(contentsOf: URL(fileURLWithPath: backup)) == before, "looking changed the backup")
        #expect(size(backup + "-wal") == nil && size(backup + ".ballast") == nil)
        let write = try ctl(["--db", backup, "--config", h.configPath, "put", "c", "x"])
        #expect(write.status != 0 && write.stderr.contains("read-only"), "\(write.stdout)\(write.stderr)")

        // Put in place beside the crash's WAL (forgotten): refused, not merged.
        try before.write(to: URL(fileURLWithPath: h.database))
        let start = try runAssetd(["--config", h.configPath])
        #expect(start.status == 78, "\(start.stderr)")
        let restore = try ctl(["--db", h.database, "--config", h.configPath, "restore"])
        #expect(restore.status != 0, "\(restore.stdout)")
    }

    @Test("restore refuses another database's backup unless --force")
    func otherSource() throws {
        let h = try DaemonHarness()
        try h.client().putObject("c", "a")
        let backup = h.dir + "/backup.sqlite"
        #expect(try h.assetctl("backup", backup).status == 0)
        #expect(h.stop() == 0)
        // Another instance's config: its store.path is not the backup's source.
        let other = h.dir + "/other.toml"
        try h.configText(socket: h.dir + "/run/other.sock", database: h.dir + "/state/other.sqlite")
            .write(toFile: other, atomically: true, encoding: .utf8)
        let placed = h.dir + "/state/other.sqlite"
        try FileManager.default.copyItem(atPath: backup, toPath: placed)
        let refused = try ctl(["--db", placed, "--config", other, "restore"])
        #expect(refused.status != 0 && refused.stderr.contains("not of this config's store.path"), "\(refused.stderr)")
        let still = try runAssetd(["--config", other])
        #expect(still.status == 78, "the copy is still marked: \(still.stderr)")
        let forced = try ctl(["--db", placed, "--config", other, "restore", "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
    }

    @Test("after a restore: commits go on past the source's, orphans changed since the backup are kept")
    func restoredCommitsAndOrphans() throws {
        let h = try DaemonHarness(filesSection: #"orphan_grace = "0s""#)
        var c = try h.client()
        let old = try h.makeFile("old.bin")
        try c.putObject("c", "old", ["file": .string(old)])
        let backup = h.dir + "/backup.sqlite"
        let b = try h.assetctl("--json", "backup", backup)
        #expect(b.status == 0, "\(b.stderr)")
        var after = [Int64]()
        var lost = [String]()
        for i in 1...3 {
            let file = try h.makeFile("new\(i).bin")
            lost.append(file)
            after.append(try c.putObject("c", "new\(i)", ["file": .string(file)]))  // acknowledged
        }
        #expect(h.stop() == 0)
        try putInPlace(backup, h)
        let restore = try ctl(["--db", h.database, "--config", h.configPath, "--json", "restore"])
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")

        try h.start()
        c = try h.client()
        let next = try c.putObject("c", "other")
        #expect(next > after.max()!, "commit \(next) given again after the restore (\(after))")
        #expect(h.log.contains("--since-backup"), "the start says what the restore holds")

        let kept = try h.assetctl("verify", "--orphans", "--delete-orphans", "--force")
        #expect(kept.stdout.contains("changed since the restored backup"), "\(kept.stdout)\(kept.stderr)")
        #expect(lost.allSatisfy(h.exists), "the files of puts the restore lost were deleted")
        let released = try h.assetctl("verify", "--orphans", "--delete-orphans", "--force", "--since-backup")
        #expect(released.stdout.contains("removed"), "\(released.stdout)\(released.stderr)")
        #expect(!lost.contains(where: h.exists))
        #expect(h.exists(old))
        #expect(h.stop() == 0)
    }

    @Test("restore refuses a backup where it lies, and a -wal beside the file, writing nothing")
    func restoreInPlaceWithoutWAL() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("c", "a")
        let backup = h.dir + "/backup.sqlite"
        #expect(try h.assetctl("backup", backup).status == 0)
        try c.putObject("c", "b")
        h.stop(signal: SIGKILL)
        #expect((size(h.database + "-wal") ?? 0) > 0, "the crash left its WAL")
        let before = try Data(contentsOf: URL(fileURLWithPath: backup))
        let lying = try ctl(["--db", backup, "--config", h.configPath, "restore", "--force"])
        #expect(lying.status != 0 && lying.stderr.contains("Put the copy in place"), "\(lying.stdout)\(lying.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: backup)) == before && size(backup + "-wal") == nil)
        let database = try Data(contentsOf: URL(fileURLWithPath: h.database))
        let wal = try ctl(["--db", h.database, "--config", h.configPath, "restore", "--force"])
        let named = wal.stderr.contains("-wal (") && wal.stderr.contains("remove")
        #expect(wal.status != 0 && named, "\(wal.stdout)\(wal.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: h.database)) == database, "the log was read in")
    }

    @Test("--db on another program's SQLite file (even with a meta table) refuses it before writing anything")
    func foreignSQLite() throws {
        let h = try DaemonHarness()
        #expect(h.stop() == 0)
        let foreign = h.dir + "/state/other.sqlite"
        let sql = "CREATE TABLE meta(key TEXT, value); INSERT INTO meta VALUES ('a', 1);"
        let made = try runProcess("/usr/bin/sqlite3", [foreign, sql])
        #expect(made.status == 0, "\(made.stderr)")
        let before = try Data(contentsOf: URL(fileURLWithPath: foreign))
        for args in [["ls", "c"], ["restore", "--force"]] {
            let r = try ctl(["--db", foreign, "--config", h.configPath] + args)
            #expect(r.status != 0 && r.stderr.contains("not an assetd one"), "\(r.stdout)\(r.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: foreign)) == before, "the file was written")
            for side in ["-wal", "-shm", ".lock", ".ballast"] { #expect(size(foreign + side) == nil, "\(side) made") }
        }
    }
}
