// The files assetd makes beside the database (`<db>.lock`, the ballast) are never opened
// through a symlink: a user who could place one there would have root truncate and write its
// target (assetd(8), Managed roots: the database's folder).

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import GRDBSQLite
import Glibc
import Testing

@Suite struct StateFileLinkTests {
    /// A file outside the store whose content must survive, and a symlink to it at `link`.
    func plant(_ f: Fixture, at link: String) throws -> String {
        let victim = f.dir + "/victim"
        try "keep".write(toFile: victim, atomically: false, encoding: .utf8)
        unlink(link)
        #expect(symlink(victim, link) == 0)
        return victim
    }

    @Test("a symlink at the lock file's name stops the open and its target is not written")
    func lockThroughSymlink() throws {
        let f = try Fixture()
        f.store.close()
        let victim = try plant(f, at: f.dbPath + ".lock")
        #expect(throws: StoreError.self) { _ = try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
    }

    @Test("a symlink at the ballast's new name is replaced, not written through")
    func ballastThroughSymlink() throws {
        let f = try Fixture()
        f.store.close()
        unlink(f.dbPath + ".ballast")
        let victim = try plant(f, at: f.dbPath + ".ballast.new")
        try f.reopen()
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        var st = stat()
        #expect(lstat(f.dbPath + ".ballast", &st) == 0 && st.st_mode & S_IFMT == S_IFREG && st.st_size > 0)
    }

    @Test("any SQLite connection of the process, on any thread, refuses a hard-linked -journal")
    func linkedJournal() throws {
        let folders = TempFolders(prefix: "assetd-journal-")
        let dir = try folders.make()  // no store: SQLite alone
        let path = dir + "/plain.sqlite"
        let victim = dir + "/victim"
        try "keep".write(toFile: victim, atomically: false, encoding: .utf8)
        // A queue keeps SQLite's rollback journal, and runs on a dispatch queue of its own.
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "CREATE TABLE t(x)") }
        #expect(link(victim, path + "-journal") == 0)
        #expect(throws: DatabaseError.self) { try queue.write { try $0.execute(sql: "INSERT INTO t VALUES (1)") } }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        #expect(unlink(path + "-journal") == 0)
        try queue.write { try $0.execute(sql: "INSERT INTO t VALUES (1)") }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 1)
    }

    @Test("the guard lets SQLite open a database's folder named like a side file, to sync it")
    func folderNamedLikeSideFile() throws {
        let folders = TempFolders(prefix: "assetd-dirsync-")
        let dir = try folders.make() + "/state-wal"
        #expect(mkdir(dir, 0o755) == 0)
        // The unix VFS's `open`, as SQLite's openDirectory calls it before the fsync.
        let vfs = try #require(sqlite3_vfs_find("unix"))
        let call = try #require(vfs.pointee.xGetSystemCall(vfs, "open"))
        typealias Open = @convention(c) (UnsafePointer<CChar>?, Int32, mode_t) -> Int32
        let fd = unsafeBitCast(call, to: Open.self)(dir, O_RDONLY, 0)
        #expect(fd >= 0)
        if fd >= 0 { close(fd) }
    }

    @Test("the store syncs the WAL SQLite opened, never a file put at its name since")
    func walDescriptorIsSQLites() throws {
        let f = try Fixture()
        defer { f.store.close() }
        let wal = f.dbPath + "-wal"
        let aside = f.dbPath + "-wal.aside"
        // The folder's owner moves the WAL SQLite writes away (SQLite keeps its descriptor)...
        #expect(rename(wal, aside) == 0)
        defer { if access(aside, F_OK) == 0 { unlink(wal); rename(aside, wal) } }
        // ... and puts a symlink to it there, or a file of its own, or links a second name.
        #expect(symlink(aside, wal) == 0)
        #expect(throws: StoreError.self) { try f.store.openWALDescriptor(settling: false) }
        unlink(wal)
        try "".write(toFile: wal, atomically: false, encoding: .utf8)
        #expect(throws: StoreError.self) { try f.store.openWALDescriptor(settling: false) }
        unlink(wal)
        #expect(link(aside, wal) == 0)
        #expect(throws: StoreError.self) { try f.store.openWALDescriptor(settling: false) }
        unlink(wal)
        #expect(rename(aside, wal) == 0)
        try f.store.openWALDescriptor(settling: false)
    }

    @Test(
        "a symlink of another user at the database's name: no open, and its target is untouched",
        .enabled(if: getuid() == 0))
    func databaseThroughForeignSymlink() throws {
        let f = try Fixture()
        f.store.close()
        let target = f.dir + "/empty"
        #expect(creat(target, 0o644) >= 0)
        for side in ["", "-wal", "-shm"] { unlink(f.dbPath + side) }
        #expect(symlink(target, f.dbPath) == 0)
        #expect(lchown(f.dbPath, 65534, 65534) == 0)  // the folder's owner made it
        #expect(throws: StoreError.self) { _ = try Store(path: f.dbPath, configuration: f.configuration) }
        var st = stat()
        #expect(stat(target, &st) == 0 && st.st_size == 0)
        #expect(access(target + ".lock", F_OK) != 0)
    }

    @Test(
        "SQLite follows no symlink of another user in a database's name, even one put there later",
        .enabled(if: getuid() == 0))
    func sqliteFollowsNoForeignSymlink() throws {
        let folders = TempFolders(prefix: "assetd-readlink-")
        let dir = try folders.make()
        let target = dir + "/empty"
        #expect(creat(target, 0o644) >= 0)
        #expect(symlink(target, dir + "/db.sqlite") == 0)
        #expect(lchown(dir + "/db.sqlite", 65534, 65534) == 0)
        #expect(throws: DatabaseError.self) { _ = try DatabaseQueue(path: dir + "/db.sqlite") }
        var st = stat()
        #expect(stat(target, &st) == 0 && st.st_size == 0)
        // Root's own symlink is still followed.
        #expect(lchown(dir + "/db.sqlite", 0, 0) == 0)
        let queue = try DatabaseQueue(path: dir + "/db.sqlite")
        try queue.write { try $0.execute(sql: "CREATE TABLE t(x)") }
        #expect(stat(target, &st) == 0 && st.st_size > 0)
    }

    @Test("a linked side file does not mask another reason the open fails")
    func sideFileMasksNoOtherError() throws {
        let f = try Fixture()
        f.store.close()
        let victim = f.dir + "/victim"
        try "keep".write(toFile: victim, atomically: false, encoding: .utf8)
        unlink(f.dbPath + "-journal")
        #expect(link(victim, f.dbPath + "-journal") == 0)
        #expect(link(f.dbPath, f.dir + "/second-name") == 0)  // refused before SQLite opens
        let error = #expect(throws: StoreError.self) { _ = try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("the lock is taken by name") == true)
        // With the database's second name gone, the refused side file is named.
        #expect(unlink(f.dir + "/second-name") == 0)
        let refused = #expect(throws: StoreError.self) { _ = try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(refused?.code == .conflict)
        #expect(refused?.message.contains("-journal has 2 names") == true)
    }

    @Test("SQLite opens no database with another name, one linked after the store's look included")
    func linkedDatabaseRefusedAtOpen() throws {
        let folders = TempFolders(prefix: "assetd-mainlink-")
        let dir = try folders.make()
        // An empty file of someone else's, linked at the name a database is opened by (the
        // store's look by name has passed): SQLite would write a new schema into it.
        let victim = dir + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data()))
        #expect(link(victim, dir + "/store.sqlite") == 0)
        #expect(throws: DatabaseError.self) {
            let queue = try DatabaseQueue(path: dir + "/store.sqlite")
            try queue.write { try $0.execute(sql: "CREATE TABLE t(x)") }
        }
        var st = stat()
        #expect(stat(victim, &st) == 0 && st.st_size == 0)
        // With one name the same open works.
        #expect(unlink(victim) == 0)
        let queue = try DatabaseQueue(path: dir + "/store.sqlite")
        try queue.write { try $0.execute(sql: "CREATE TABLE t(x)") }
    }

    @Test("SQLite's open of a database name refuses a FIFO, which a read-only open would wait on")
    func fifoAtDatabaseName() throws {
        let folders = TempFolders(prefix: "assetd-mainfifo-")
        let dir = try folders.make()
        #expect(mkfifo(dir + "/store.sqlite", 0o600) == 0)
        // The unix VFS's `open` as SQLite calls it; read-write, which does not wait on a FIFO.
        let vfs = try #require(sqlite3_vfs_find("unix"))
        let call = try #require(vfs.pointee.xGetSystemCall(vfs, "open"))
        typealias Open = @convention(c) (UnsafePointer<CChar>?, Int32, mode_t) -> Int32
        let fd = unsafeBitCast(call, to: Open.self)(dir + "/store.sqlite", O_RDWR, 0)
        #expect(fd == -1 && errno == EPERM)
        if fd >= 0 { close(fd) }
    }
}
