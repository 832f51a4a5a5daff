// The fence around the WAL write-combining VFS: only the store's writing connections use it,
// only with the SQLite versions it was tested with and with store.coalesce_wal on, and stats
// says which (WALCoalescing.swift).

import CWALCoalesce
import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// The name of the VFS `h`'s main database was opened with.
private func vfsName(_ h: OpaquePointer?) -> String? {
    var vfs: UnsafeMutablePointer<sqlite3_vfs>?
    guard sqlite3_file_control(h, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) == SQLITE_OK else { return nil }
    return vfs.map { String(cString: $0.pointee.zName) }
}

/// The methods of `h`'s main database file, which the VFS that opened it chose.
private func mainFileMethods(_ h: OpaquePointer?) -> UnsafePointer<sqlite3_io_methods>? {
    var file: UnsafeMutablePointer<sqlite3_file>?
    guard sqlite3_file_control(h, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK else { return nil }
    return file?.pointee.pMethods
}

/// SQLite's default VFS, which the coalescing one wraps.
private var defaultVFS: String { String(cString: sqlite3_vfs_find(nil)!.pointee.zName) }

@Suite struct WALCoalesceFenceTests {
    private func writerVFS(_ f: Fixture) throws -> String? {
        try f.store.write { tx in vfsName(tx.db.sqliteConnection) }.value
    }

    @Test("the decision: on within the tested versions, off (with why) outside them, when switched off or read-only")
    func decision() {
        let tested = WALCoalescing.testedVersions
        #expect(tested.contains(sqlite3_libversion_number()), "this machine's SQLite is the tested one")
        for v in [tested.lowerBound, tested.upperBound - 1, sqlite3_libversion_number()] {
            let d = WALCoalescing.decide(enabled: true, readOnly: false, sqliteVersion: v, takesURIs: true)
            #expect(d.active && d.reason == nil && !d.fellBack, "\(v)")
        }
        for v in [tested.lowerBound - 1, tested.upperBound, 3_008_000, 4_000_000] {
            let d = WALCoalescing.decide(enabled: true, readOnly: false, sqliteVersion: v, takesURIs: true)
            #expect(!d.active && d.fellBack, "\(v)")
            #expect(d.reason?.contains(WALCoalescing.versionText(v)) == true, "\(d.reason ?? "")")
        }
        #expect(WALCoalescing.versionText(3_040_001) == "3.40.1")
        let off = WALCoalescing.decide(
            enabled: false, readOnly: false, sqliteVersion: tested.lowerBound, takesURIs: true)
        #expect(!off.active && !off.fellBack && off.reason?.contains("store.coalesce_wal") == true)
        let readOnly = WALCoalescing.decide(
            enabled: true, readOnly: true, sqliteVersion: tested.lowerBound, takesURIs: true)
        #expect(!readOnly.active && !readOnly.fellBack)
        let noURIs = WALCoalescing.decide(
            enabled: true, readOnly: false, sqliteVersion: tested.lowerBound, takesURIs: false)
        #expect(!noURIs.active && noURIs.fellBack)
    }

    @Test("a URI names the VFS for GRDB, with ?, # and % of the path escaped")
    func poolPath() {
        #expect(WALCoalescing.on.poolPath("/a/b c?d#e%f") == "file:///a/b%20c%3Fd%23e%25f?vfs=assetd-coalesce")
        #expect(WALCoalescing.on.poolPath("rel/db") == "file:rel/db?vfs=assetd-coalesce")
        #expect(WALCoalescing.off("x").poolPath("/a/b?c") == "/a/b?c")
    }

    @Test("a store in a folder whose name has ?, #, % and spaces opens its own files on the coalescing VFS")
    func oddPath() throws {
        let f = try Fixture()
        let folder = f.dir + "/a b?c#d%25 é"
        let store = try Store(path: folder + "/db.sqlite", configuration: f.configuration)
        defer { store.close() }
        try store.write { tx in try tx.put(ref("c", "k"), value: 1) }
        #expect(store.walCoalescing.active)
        #expect(try store.write { tx in vfsName(tx.db.sqliteConnection) }.value == WALCoalescing.vfsName)
        #expect(FileManager.default.fileExists(atPath: folder + "/db.sqlite-wal"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted().first == "db.sqlite")
    }

    @Test("by default the writer and the checkpointer use the coalescing VFS; stats says it is on")
    func defaultOn() throws {
        let f = try Fixture()
        #expect(f.store.walCoalescing.active)
        #expect(try writerVFS(f) == WALCoalescing.vfsName)
        let wal = try f.store.statistics().json["wal"]
        #expect(wal?["coalescing"] == true)
        #expect(wal?["coalescing_off_reason"] == nil)
        #expect(f.store.openWarnings.isEmpty)
    }

    @Test("the coalescing VFS is not the process's default: a connection opened outside the store does not use it")
    func notTheDefault() throws {
        let f = try Fixture()
        try f.put([(ref("c", "a"), 1)])
        #expect(defaultVFS != WALCoalescing.vfsName)
        var h: OpaquePointer?
        #expect(sqlite3_open_v2(f.dbPath, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(h) }
        #expect(vfsName(h) == defaultVFS)
        let q = try DatabaseQueue(path: f.dbPath)
        defer { try? q.close() }
        #expect(try q.read { db in vfsName(db.sqliteConnection) } == defaultVFS)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") } == 1)
    }

    @Test(
        "store.coalesce_wal off: the plain VFS, and puts, files, reads, queries, checkpoints, backups and reopening all work"
    )
    func switchedOff() throws {
        let f = try Fixture { $0.coalesceWAL = false }
        #expect(!f.store.walCoalescing.active)
        #expect(try writerVFS(f) == defaultVFS)
        let wal = try f.store.statistics().json["wal"]
        #expect(wal?["coalescing"] == false)
        #expect(wal?["coalescing_off_reason"]?.stringValue?.contains("store.coalesce_wal") == true)
        #expect(f.store.openWarnings.isEmpty, "switched off on purpose: nothing to warn about")
        try expectWorks(f)
    }

    @Test("a SQLite version outside the tested range: the plain VFS, one warning for the start-up log, stats says why")
    func versionOutsideRange() throws {
        let version = WALCoalescing.testedVersions.upperBound
        let f = try Fixture { $0.sqliteVersionForCoalescing = version }
        #expect(!f.store.walCoalescing.active)
        #expect(try writerVFS(f) == defaultVFS)
        #expect(f.store.openWarnings.count == 1)
        #expect(
            f.store.openWarnings.first?.contains(WALCoalescing.versionText(version)) == true, "\(f.store.openWarnings)")
        let reason = try f.store.statistics().json["wal"]?["coalescing_off_reason"]?.stringValue
        #expect(reason?.contains(WALCoalescing.versionText(version)) == true, "\(reason ?? "")")
        try expectWorks(f)
    }

    /// A store's life on whatever VFS it has: files put and unlinked, point reads, an index
    /// query, a checkpoint, a backup, a reopen.
    private func expectWorks(_ f: Fixture) throws {
        let file = try f.makeFile("a.bin", size: 100)
        for i in 0..<50 {
            try f.put([(ref("c", "k\(i)"), ["i": .int(Int64(i)), "pad": .string(String(repeating: "x", count: 2000))])])
        }
        try f.put([(ref("c", "file"), ["file": .string(file)])])
        #expect(try f.store.objectJSON(ref("c", "k7")) != nil)
        #expect(try f.store.query(clause: "WHERE collection = 'c'").count == 51)
        try f.delete(ref("c", "file"))
        _ = try f.store.sweep(retryFailed: true)
        #expect(!f.exists(file))
        #expect(try f.store.checkpoint())
        let copy = f.dir + "/copy.sqlite"
        _ = try f.store.backup(to: copy)
        let q = try DatabaseQueue(path: copy)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") } == 50)
        try q.close()
        try f.reopen()
        #expect(try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM object") } == 50)
        #expect(try f.store.read { r in try String.fetchOne(r.db, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test(
        "readers on SQLite's default VFS (point reads, queries) see every commit of the coalescing writer when it returns"
    )
    func plainReadersSeeCommits() throws {
        let f = try Fixture { $0.durability = .normal }
        #expect(try writerVFS(f) == WALCoalescing.vfsName)
        // Query connections open through the VFS that bounds their temporary files, which
        // hands the database's own files to the default VFS: their methods are its own.
        var plain: OpaquePointer?
        #expect(sqlite3_open_v2(f.dbPath, &plain, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(plain) }
        #expect(vfsName(plain) == defaultVFS)
        #expect(try f.store.queries.with { vfsName($0.handle) }?.hasPrefix("assetd-query-temp-") == true)
        let methods = try f.store.queries.with { mainFileMethods($0.handle) }
        #expect(methods != nil && methods == mainFileMethods(plain))
        for round in 0..<30 {
            let count = [1, 40, 200][round % 3]
            try f.put(
                (0..<count).map { (ref("r\(round)", "k\($0)"), ["pad": .string(String(repeating: "y", count: 3000))]) })
            #expect(try f.store.objectJSON(ref("r\(round)", "k\(count - 1)")) != nil, "round \(round)")
            #expect(
                try f.store.query(clause: "WHERE collection = ?", parameters: [.string("r\(round)")]).count == count)
        }
    }
}
