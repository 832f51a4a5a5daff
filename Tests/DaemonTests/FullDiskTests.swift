// assetd on a full disk (assetd(8), FULL DISK): the database, its WAL and the managed root on
// an 8 MiB tmpfs the test fills. Mounting needs CAP_SYS_ADMIN: skipped, saying so, without it.

import AssetClient
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Glibc
import Testing
@testable import AssetDaemon
@testable import AssetService

/// Free bytes on the filesystem holding `path`.
private func freeBytes(_ path: String) -> Int64 {
    var vfs = statvfs()
    guard statvfs(path, &vfs) == 0 else { return -1 }
    return Int64(vfs.f_bavail) * Int64(vfs.f_frsize)
}

/// Points `h`'s config at a database and a root both on `disk`; returns them.
private func onDisk(_ h: DaemonHarness, _ disk: String) throws -> (root: String, database: String) {
    let root = disk + "/root"
    let database = disk + "/state/assetd.sqlite"
    // A tmpfs's top folder is 1777, and assetd refuses a database folder others may write.
    #expect(chmod(disk, 0o755) == 0)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    try h.configText()
        .replacingOccurrences(of: h.database, with: database)
        .replacingOccurrences(of: "roots = [\"\(h.root)\"]", with: "roots = [\"\(root)\"]")
        .write(toFile: h.configPath, atomically: true, encoding: .utf8)
    return (root, database)
}

/// Puts `keys` (collection "v") through `h`'s assetd with its database and root on an 8 MiB
/// tmpfs at `disk`, and stops it cleanly; returns the database. The caller unmounts `disk`.
private func storedOnDisk(_ h: DaemonHarness, _ disk: String, keys: [String]) throws -> String {
    #expect(Tmpfs.mount(disk, mib: 8))
    let (_, database) = try onDisk(h, disk)
    try h.start()
    let c = try h.client()
    for k in keys { try c.putObject("v", k, ["n": 1]) }
    c.close()
    #expect(h.stop() == 0)
    return database
}

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct FullDiskTests {
    @Test(
        "stopped cleanly and started on a full disk, assetd opens through its reserve (the open writes into the empty WAL) and serves reads"
    )
    func startAfterCleanStopOnFullDisk() throws {
        let h = try DaemonHarness(start: false)
        let disk = h.dir + "/disk"
        defer { Tmpfs.unmount(disk) }
        let database = try storedOnDisk(h, disk, keys: ["a"])
        Tmpfs.fill(disk + "/filler")
        try h.start()  // today: exits 1, "database or disk is full"
        let d = try h.client()
        #expect(try d.getObject("v", "a")["value"] == ["n": 1])
        #expect(
            eventually(timeout: 60) {
                h.log.contains("released the reserve \(database).ballast so that the database can open")
            })
        d.close()
        #expect(h.stop() == 0)
    }

    @Test("touches still waiting for room on a full disk when assetd stops are reported lost, with their number")
    func touchesLostAtShutdownOnFullDiskAreLogged() throws {
        let h = try DaemonHarness(storeSection: #"access_flush = "1h""#, start: false)
        let disk = h.dir + "/disk"
        defer { Tmpfs.unmount(disk) }
        let database = try storedOnDisk(h, disk, keys: ["a", "b"])
        Tmpfs.fill(disk + "/filler")
        try h.start()  // opens through the reserve: a flush now waits for room
        #expect(
            eventually(timeout: 60) {
                h.log.contains("released the reserve \(database).ballast so that the database can open")
            })
        let d = try h.client()
        for k in ["a", "b"] { _ = try d.call("object.touch", ["collection": "v", "key": .string(k)]) }
        d.close()
        #expect(h.stop() == 0)
        #expect(h.log.contains("access times lost at shutdown: 2 waited for room on the disk"), "\(h.log)")
    }

    @Test("assetctl --db writes a touch before it exits, and on a full disk says the access time was not written")
    func offlineTouchOnFullDiskIsReported() throws {
        let h = try DaemonHarness(start: false)
        let disk = h.dir + "/disk"
        defer { Tmpfs.unmount(disk) }
        let database = try storedOnDisk(h, disk, keys: ["a", "b"])
        func offline(_ args: String...) throws -> ProcessResult {
            try runProcess(Binaries.assetctl, ["--db", database, "--config", h.configPath] + args)
        }

        let touched = try offline("touch", "v", "a")
        #expect(touched.status == 0 && !touched.stderr.contains("warning"), "\(touched.stderr)")
        let got = try offline("--json", "get", "v", "a")
        let object = try JSONValue.parse(got.stdout)
        #expect((object["accessed"]?.doubleValue ?? 0) > (object["created"]?.doubleValue ?? .infinity))

        Tmpfs.fill(disk + "/filler")
        let full = try offline("touch", "v", "b")
        #expect(full.status == 0, "the touch itself is answered: \(full.stderr)")
        #expect(
            full.stderr.contains("warning: access times not written: 1 waited for room on the disk"), "\(full.stderr)")
    }

    @Test(
        "killed and restarted on a full disk, assetd starts, serves reads, answers puts storage_full, deletes through its reserve, and allocates the reserve again once the sweep freed space"
    )
    func restartOnFullDisk() throws {
        let h = try DaemonHarness(start: false)
        let disk = h.dir + "/disk"
        #expect(Tmpfs.mount(disk, mib: 8))
        defer { Tmpfs.unmount(disk) }
        let (root, database) = try onDisk(h, disk)
        let ballast = database + ".ballast"
        try h.start()

        // The default reserve, 8 MiB, is cut to a sixteenth of this disk.
        var st = stat()
        #expect(stat(ballast, &st) == 0 && st.st_size == 512 << 10 && st.st_blocks * 512 >= 512 << 10)
        let c = try h.client()
        let big = root + "/big.bin"
        #expect(FileManager.default.createFile(atPath: big, contents: Data(repeating: 1, count: 2 << 20)))
        try c.putObject("fs", "big", ["file": .string(big)])
        // Few commits: the WAL the kill leaves stays under the frames at which low space
        // checkpoints it, so writing it back needs the database file to grow.
        for i in 0..<5 { try c.putObject("v", "k\(i)", ["n": .int(Int64(i))]) }
        c.close()
        h.stop(signal: SIGKILL)
        #expect(stat(database + "-wal", &st) == 0 && st.st_size > 0, "the kill left a WAL to write back")

        Tmpfs.fill(disk + "/filler")
        #expect(freeBytes(disk) < 4096)
        try h.start()  // today: exits 1, storage_full
        let d = try h.client()
        #expect(try d.getObject("v", "k3")["value"]?["n"] == 3)
        #expect(try d.call("object.list", ["collection": "v"])["keys"]?.arrayValue?.count == 5)
        #expect(try d.call("stats")["objects"] == 6)
        #expect(h.log.contains("the disk holding \(database) is full"), "\(h.log)")

        let put: JSONValue = ["collection": "v", "key": "new", "value": ["n": 1]]
        expectRPCError(Code.application, "storage_full") { () throws(ClientError) in try d.call("object.put", put) }
        // The delete commits through the reserve; the sweep unlinks the file and commits too.
        let deleted = try d.deleteObject("fs", "big")
        #expect(deleted["unlinks_queued"] == [.string(big)])
        #expect(eventually(timeout: 60) { !h.exists(big) }, "the sweep did not unlink the file")
        #expect(eventually(timeout: 60) { h.log.contains("released the reserve \(ballast)") })
        // 2 MiB free again: the reserve comes back, and writes are taken.
        #expect(eventually(timeout: 60) { h.exists(ballast) }, "the reserve was not allocated again: \(h.log)")
        #expect(eventually(timeout: 60) { (try? d.putObject("v", "new")) != nil })
        #expect(eventually(timeout: 60) { h.log.contains("there is room again on the disk holding \(database)") })
        #expect(try eventually(timeout: 60) { try d.call("pending")["pending"]?.arrayValue?.isEmpty ?? true })

        // Full again: a transact of deletes only uses the reserve too; one with a put does not.
        Tmpfs.fill(disk + "/filler2")
        let mixed: JSONValue = [
            "ops": [
                ["method": "object.delete", "params": ["collection": "v", "key": "k0"]],
                ["method": "object.put", "params": ["collection": "v", "key": "k9", "value": ["n": 9]]],
            ]
        ]
        expectRPCError(Code.application, "storage_full") { () throws(ClientError) in try d.call("transact", mixed) }
        #expect(h.exists(ballast))
        let deletes: JSONValue = [
            "ops": .array(
                (0..<3).map { ["method": "object.delete", "params": ["collection": "v", "key": .string("k\($0)")]] })
        ]
        #expect(try d.call("transact", deletes)["deleted"]?.arrayValue?.count == 3)
        #expect(!h.exists(ballast))
        d.close()
        #expect(h.stop() == 0)
    }

    @Test(
        "a disk the database's values filled: after most objects are deleted, puts come back within seconds; vacuum without room is refused up front, saying what it needs"
    )
    func putsComeBackAfterDeletesAndVacuumRefused() throws {
        let h = try DaemonHarness(start: false)
        let disk = h.dir + "/disk"
        #expect(Tmpfs.mount(disk, mib: 8))
        defer { Tmpfs.unmount(disk) }
        let (_, database) = try onDisk(h, disk)
        try h.start()
        let c = try h.client()
        let value: JSONValue = ["text": .string(String(repeating: "v", count: 100_000))]
        var n = 0
        fill: while n < 200 {
            do { _ = try c.putObject("v", "k\(n)", value) } catch {
                #expect("\(error)".contains("full"), "\(error)")
                break fill
            }
            n += 1
        }
        #expect(n > 20 && n < 200, "\(n) puts")
        // The disk at 0: the deletes meet it, and the reserve goes to them. The WAL written
        // back first: growth of the file left in it would need blocks (assetd(8), FULL DISK).
        _ = try c.call("checkpoint")
        let filler = disk + "/filler"
        Tmpfs.fill(filler)
        for i in 0..<n * 3 / 4 { _ = try c.deleteObject("v", "k\(i)") }
        #expect(!h.exists(database + ".ballast"), "the deletes met the full disk")
        // Something else keeps the disk nearly full: room for the reserve and 200 KiB.
        Tmpfs.fill(filler)
        var st = stat()
        #expect(stat(filler, &st) == 0 && truncate(filler, st.st_size - (712 << 10)) == 0)
        // Today: refused for good, the disk never having the reserve and its headroom free.
        #expect(eventually(timeout: 60) { h.log.contains("allocated the reserve \(database).ballast") }, "\(h.log)")
        _ = try c.putObject("v", "again", value)
        #expect(h.exists(database + ".ballast"))

        Tmpfs.fill(filler)
        let free = freeBytes(disk)
        let wal = stat(database + "-wal", &st) == 0 ? st.st_size : 0
        let refused = expectRPCError(Code.application, "storage_full") { () throws(ClientError) in
            try c.call("vacuum")
        }
        #expect(refused?.message.contains("vacuum needs") == true, "\(String(describing: refused))")
        // The space check may truncate the WAL meanwhile: free space only grows.
        #expect(freeBytes(disk) >= free, "the disk is left as it was")
        #expect(stat(database + "-wal", &st) != 0 || st.st_size <= wal, "the WAL did not grow")
        c.close()
        #expect(h.stop() == 0)
    }
}

/// A put for collection "c" with `value`.
private func put(_ key: String, _ value: JSONValue) -> JSONValue {
    ["collection": "c", "key": .string(key), "value": value]
}

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct FullDiskBatchTests {
    private let folders = TempFolders(prefix: "assetd-fullbatch-")

    @Test(
        "on a nearly full disk, one client's put too large for the room left fails alone: the small puts of other uids in its batch commit in that round"
    )
    func largePutFailsAlone() throws {
        let dir = try folders.make()
        #expect(Tmpfs.mount(dir, mib: 16))  // a reserve of 1 MiB
        defer { Tmpfs.unmount(dir) }
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [root]))
        defer { store.close() }
        #expect(try store.checkpoint())
        let filler = dir + "/filler"
        Tmpfs.fill(filler)
        var st = stat()
        #expect(stat(filler, &st) == 0 && truncate(filler, st.st_size - (1 << 20)) == 0)  // 1 MiB free
        store.maintainSpace()  // space is low: puts check the file's growth
        func ctx(_ uid: UInt32) -> MethodContext {
            MethodContext(
                store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: true), enforceOwnership: false)
        }
        let inputs =
            [(put("big", ["text": .string(String(repeating: "b", count: 800_000))]), ctx(1000))]
            + (1...3).map { (put("s\($0)", ["n": 1]), ctx(1000 + UInt32($0))) }
        var taken = false
        let done = PutBatch.run(store) { () -> [(Int, Params, MethodContext)] in
            defer { taken = true }
            return taken ? [] : inputs.indices.map { ($0, Params(inputs[$0].0), inputs[$0].1) }
        }
        // Before: the batch and its retry failed at commit, and the uids that had run twice
        // waited for the next batch.
        #expect(done.deferred.isEmpty, "deferred: \(done.deferred)")
        let results = Dictionary(uniqueKeysWithValues: done.results.map { ($0.0, $0.1) })
        if case .failure(let e)? = results[0] {
            #expect(e.message.contains("must grow by"), "\(e.message)")
        } else {
            Issue.record("the large put did not fail: \(String(describing: results[0]))")
        }
        for i in 1...3 {
            guard case .success? = results[i] else {
                Issue.record("small put \(i): \(String(describing: results[i]))")
                continue
            }
        }
        #expect(try store.read { r in try (1...3).allSatisfy { try r.get(ref("c", "s\($0)")) != nil } })
    }
}

@Suite struct ReserveConfigTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: DaemonConfig.embeddedDefaults())
    }

    @Test(
        "store.reserve is a size (8MiB unless set, 0 for none) that reaches the store and the summary; anything else is an error naming it"
    )
    func reserveKey() throws {
        #expect(try parse("").reserve == 8 << 20)
        let c = try parse("[store]\nreserve = \"64MiB\"")
        #expect(c.storeConfiguration().reserve == 64 << 20)
        #expect(c.summary.contains("store.reserve = \(64 << 20)"))
        #expect(try parse("[store]\nreserve = 0").storeConfiguration().reserve == 0)
        for bad in ["-1", "\"lots\"", "true"] {
            #expect(throws: ConfigError.self) { try parse("[store]\nreserve = \(bad)") }
            do { _ = try parse("[store]\nreserve = \(bad)") } catch {
                #expect(error.description.contains("store.reserve"))
            }
        }
    }
}
