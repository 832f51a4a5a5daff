// `assetctl --db` on a backup copy, and the restore (assetctl(1), restore; assetd(8), Backups):
// opening a database with --db acts on nothing, a backup copy never sweeps against the live
// roots, assetd refuses a copy until `assetctl --db PATH restore` has made it live again.

import AssetService
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct BackupRestoreTests {
    /// A config for a database at `database` with the harness's root and the default unlink
    /// delay (0 s): what `--db` reads when the admin names no other config.
    func plainConfig(_ h: DaemonHarness, database: String, socket: String? = nil) throws -> String {
        let path = h.dir + "/plain.toml"
        try """
        [store]
        path = "\(database)"
        [control]
        socket = "\(socket ?? h.dir + "/run/plain.sock")"
        [files]
        roots = ["\(h.root)"]
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("--db stats on a backup keeps a file the live database holds again; assetd refuses the copy until restore")
    func backupSequence() throws {
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1h""#)
        let c = try h.client()
        let file = try h.makeFile("f.bin")
        try c.putObject("r", "o", ["file": .string(file)])
        _ = try c.deleteObject("r", "o")  // queued for an hour from now
        let copy = h.dir + "/backup.sqlite"
        let b = try h.assetctl("backup", copy)
        #expect(b.status == 0, "\(b.stdout)\(b.stderr)")
        try c.putObject("r", "o", ["file": .string(file)])  // held again: the live row is cancelled

        let config = try plainConfig(h, database: copy)
        let stats = try runProcess(Binaries.assetctl, ["--db", copy, "--config", config, "--json", "stats"])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(h.exists(file), "opening the copy swept its queue against the live root")
        let sweep = try runProcess(Binaries.assetctl, ["--db", copy, "--config", config, "sweep"])
        #expect(sweep.status == 1 && sweep.stderr.contains("backup copy"), "\(sweep.stdout)\(sweep.stderr)")
        #expect(h.exists(file))

        let start = try runAssetd(["--config", config])
        #expect(start.status == 78, "no restart by systemd: \(start.stderr)")
        #expect(start.stderr.contains("assetctl --db \(copy) --config CONFIG restore"), "\(start.stderr)")
        #expect(h.exists(file))

        // The restore proper: the live daemon stopped, the copy put in place and made live.
        #expect(h.stop() == 0)
        for suffix in ["-wal", "-shm"] { unlink(h.database + suffix) }
        try Data(contentsOf: URL(fileURLWithPath: copy)).write(to: URL(fileURLWithPath: h.database))
        let live = try plainConfig(h, database: h.database, socket: h.socket)
        let restore = try runProcess(Binaries.assetctl, ["--db", h.database, "--config", live, "restore"])
        #expect(restore.status == 0 && restore.stdout.hasPrefix("restored"), "\(restore.stdout)\(restore.stderr)")
        let again = try runProcess(Binaries.assetctl, ["--db", h.database, "--config", live, "restore"])
        #expect(again.status != 0 && again.stderr.contains("not a backup copy"), "\(again.stdout)\(again.stderr)")
        // assetd started on it holds the copy's queue (due by the config's unlink delay, 0 s): the
        // live database held the file again after the backup. An admin's sweep runs it.
        try h.start(arguments: ["--config", live])
        #expect(h.exists(file), "the restored copy's queue unlinked a file a later put held")
        #expect(h.log.contains("until an admin runs `assetctl sweep --release-restore`"), "\(h.log)")
        // The shipped cron's plain sweep, as root, leaves the hold.
        let plain = try h.assetctl("sweep")
        #expect(plain.status == 0 && plain.stdout.contains("--release-restore"), "\(plain.stdout)\(plain.stderr)")
        #expect(h.exists(file), "a plain admin sweep ended the restore's hold")
        let adminSweep = try h.assetctl("sweep", "--release-restore")
        #expect(adminSweep.status == 0, "\(adminSweep.stderr)")
        #expect(!h.exists(file), "the admin's sweep ran the restored queue")
        #expect(h.stop() == 0)
    }

    @Test("LocalInvoker's open leaves due unlinks queued; an explicit sweep runs them")
    func localOpenDoesNotDrain() throws {
        let f = try Fixture { $0.clock = { Date().timeIntervalSince1970 } }
        let file = try f.makeFile("a/f.bin")
        try f.put([(ref("c", "o"), ["file": .string(file)])])
        #expect(try f.delete(ref("c", "o")).filesQueued == [file])
        f.store.close()
        let local = try LocalInvoker(databasePath: f.dbPath, configPath: try Self.config(f))
        defer { local.close() }
        #expect(try local.call("pending", [:])["pending"]?.arrayValue?.count == 1)
        #expect(f.exists(file), "opened with --db, the queue was drained")
        _ = try local.call("sweep", [:])
        #expect(!f.exists(file))
    }

    /// A config naming the fixture's database and root.
    static func config(_ f: Fixture) throws -> String {
        let config = f.dir + "/assetd.toml"
        try "[store]\npath = \"\(f.dbPath)\"\n[files]\nroots = [\"\(f.root)\"]\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    @Test("an unmarked copy (cp) opened with --db unlinks nothing after a write, and refuses a sweep")
    func unmarkedCopy() throws {
        let f = try Fixture { $0.clock = { Date().timeIntervalSince1970 } }
        let file = try f.makeFile("a/f.bin"), other = try f.makeFile("a/g.bin")
        try f.put([(ref("c", "o"), ["file": .string(file)]), (ref("c", "p"), ["file": .string(other)])])
        #expect(try f.delete(ref("c", "o")).filesQueued == [file])  // due at once (no unlink delay)
        f.store.close()
        let copy = f.dir + "/copy.sqlite"
        try FileManager.default.copyItem(atPath: f.dbPath, toPath: copy)
        try f.reopen(drain: false)
        try f.put([(ref("c", "o"), ["file": .string(file)])])  // the live database holds it again
        f.store.close()

        let local = try LocalInvoker(databasePath: copy, configPath: try Self.config(f))
        defer { local.close() }
        _ = try local.call("object.delete", ["collection": "c", "key": "p"])
        #expect(f.exists(file), "the copy's queue was swept against the live root")
        #expect(f.exists(other))
        #expect(throws: RPCError.self) { try local.call("sweep", [:]) }
        do {
            _ = try local.call("sweep", [:])
        } catch {
            #expect("\(error)".contains("restore"), "\(error)")
        }
        #expect(f.exists(file))
    }
}
