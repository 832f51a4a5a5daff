// The WAL write-coalescing VFS (Sources/CWALCoalesce): fewer writes, and the WAL file on disk
// exactly as SQLite would have left it whenever another connection, or a crash, could look.

import CWALCoalesce
import Foundation
import GRDB
import GRDBSQLite
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// What to run when the connection whose database file is `file` is about to release the WAL
/// write lock (assetd_wal_coalesce_set_write_unlock_hook): its commit is published, not returned.
private let unlockHooks = Mutex<[Int: @Sendable () -> Void]>([:])

func onWriteUnlock(_ h: OpaquePointer, _ action: (@Sendable () -> Void)?) {
    var file: UnsafeMutablePointer<sqlite3_file>?
    #expect(sqlite3_file_control(h, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK)
    assetd_wal_coalesce_set_write_unlock_hook { db in
        let key = Int(bitPattern: db)
        unlockHooks.withLock { $0[key] }?()
    }
    unlockHooks.withLock { $0[Int(bitPattern: file)] = action }
}

@Suite struct WALCoalesceTests {
    /// Writes issued to the writer's WAL file so far.
    private func walWrites(_ f: Fixture) throws -> Int64 {
        try f.store.write { tx -> Int64 in
            var file: UnsafeMutablePointer<sqlite3_file>?
            let rc = sqlite3_file_control(tx.db.sqliteConnection, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
            #expect(rc == SQLITE_OK)
            return assetd_wal_coalesce_writes(file)
        }.value
    }

    private func bigValue(_ i: Int, bytes: Int) -> JSONValue {
        ["i": .int(Int64(i)), "pad": .string(String(repeating: "x", count: bytes))]
    }

    @Test("a commit of many frames reaches the WAL in a few writes, not two per frame")
    func fewWrites() throws {
        let f = try Fixture()
        // The process's soft heap limit is shared by every store of a parallel test run: under
        // its pressure SQLite spills dirty pages to the WAL mid-transaction, a write each.
        try f.store.write { tx in try tx.db.execute(sql: "PRAGMA cache_spill = OFF") }
        let before = try walWrites(f)
        #expect(before >= 0, "the writer's WAL is not the coalescing VFS's")
        // 40 objects of 3 KiB: about 40 frames for the object table alone.
        try f.put((0..<40).map { (ref("c", "k\($0)"), bigValue($0, bytes: 3000)) })
        let after = try walWrites(f)
        // The probing write above commits too (a frame or two); SQLite alone writes 80+.
        #expect(after - before <= 6, "\(after - before) writes")
        #expect(after - before >= 1)
    }

    @Test("every commit is readable by the other connections when the write returns, whatever its size")
    func visibleAtCommit() throws {
        let f = try Fixture { $0.durability = .normal }
        var expected = 0
        // One object, 20, and 400 of 8 KiB (3 MiB of frames: past the buffer and the unix
        // VFS's 128 KiB write limit, which a first version tripped over with SQLITE_FULL).
        for (round, (count, bytes)) in [(1, 10), (20, 100), (400, 8000), (1, 10), (50, 4000), (3, 10)].enumerated() {
            try f.put((0..<count).map { (ref("r\(round)", "k\($0)"), bigValue($0, bytes: bytes)) })
            expected += count
            let seen = try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM object") ?? -1 }
            #expect(seen == expected, "round \(round)")
            let lengths = try f.store.read { r in
                try Int.fetchOne(
                    r.db, sql: "SELECT SUM(length(value)) FROM object WHERE collection = ?", arguments: ["r\(round)"])
            }
            #expect((lengths ?? 0) > count * bytes, "round \(round)")
        }
    }

    @Test("a copy of the database and WAL taken right after any commit (a crash) opens with every commit in it")
    func crashCopy() throws {
        let f = try Fixture { $0.durability = .normal }
        let copyDir = f.dir + "/copy"
        try FileManager.default.createDirectory(atPath: copyDir, withIntermediateDirectories: true)
        for round in 0..<8 {
            let count = [1, 30, 200][round % 3]
            try f.put((0..<count).map { (ref("r\(round)", "k\($0)"), bigValue($0, bytes: 2000)) })
            let committed = try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM object") ?? -1 }
            // What a process crash leaves: the files as the kernel has them, no wal-index.
            for suffix in ["", "-wal"] {
                let to = copyDir + "/db.sqlite" + suffix
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: f.dbPath + suffix, toPath: to)
            }
            try? FileManager.default.removeItem(atPath: copyDir + "/db.sqlite-shm")
            let copy = try DatabaseQueue(path: copyDir + "/db.sqlite")
            let (check, seen) = try copy.read { db in
                (
                    try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object")
                )
            }
            #expect(check == "ok", "round \(round)")
            #expect(seen == committed, "round \(round)")
            try copy.close()
        }
    }

    @Test(
        "a put batch bigger than the writer's page cache (it spills, then rewrites spilled pages) is in a crash copy once acknowledged"
    )
    func bigBatchCrashCopy() throws {
        let f = try Fixture { $0.durability = .full }
        let copyDir = f.dir + "/copy"
        try FileManager.default.createDirectory(atPath: copyDir, withIntermediateDirectories: true)
        var committed = 0
        for round in 0..<3 {
            // 400 objects of 8 KiB: 3 MiB of pages, past the writer's 2 MiB cache.
            try f.put((0..<400).map { (ref("r\(round)", "k\($0)"), bigValue($0, bytes: 8000)) })
            committed += 400
            // What a kill -9 right after the acknowledgment leaves.
            for suffix in ["", "-wal"] {
                let to = copyDir + "/db.sqlite" + suffix
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: f.dbPath + suffix, toPath: to)
            }
            try? FileManager.default.removeItem(atPath: copyDir + "/db.sqlite-shm")
            let copy = try DatabaseQueue(path: copyDir + "/db.sqlite")
            let seen = try copy.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") }
            #expect(seen == committed, "round \(round)")
            try copy.close()
        }
    }

    @Test("a transaction that spills frames before its commit and then rolls back leaves later commits intact")
    func spilledRollback() throws {
        let f = try Fixture { $0.durability = .normal }
        try f.put([(ref("c", "before"), 1)])
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try f.store.write { tx in
                // A page cache of 10 pages: the transaction's changes go to the WAL early.
                try tx.db.execute(sql: "PRAGMA cache_size = 10")
                for i in 0..<300 { try tx.put(ref("spill", "k\(i)"), value: bigValue(i, bytes: 3000)) }
                throw Abandon()
            }
        }
        try f.store.write { tx in try tx.db.execute(sql: "PRAGMA cache_size = -2000") }
        try f.put((0..<5).map { (ref("c", "after\($0)"), .int(Int64($0))) })
        try f.reopen()
        let (check, spilled, kept) = try f.store.read { r in
            (
                try String.fetchOne(r.db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM object WHERE collection = 'spill'"),
                try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM object WHERE collection = 'c'")
            )
        }
        #expect(check == "ok")
        #expect(spilled == 0)
        #expect(kept == 6)
    }

    // MARK: raw connections, on the coalescing VFS unless they say otherwise

    private final class Conn: @unchecked Sendable {
        let h: OpaquePointer
        /// `vfs` nil: SQLite's default, as another program's connection.
        init(
            _ path: String, flags: Int32 = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
            vfs: String? = WALCoalescing.vfsName
        ) throws {
            _ = assetd_wal_coalesce_register()
            var h: OpaquePointer?
            let rc = sqlite3_open_v2(path, &h, flags, vfs)
            guard rc == SQLITE_OK, let h else { throw DatabaseError(resultCode: ResultCode(rawValue: rc)) }
            self.h = h
        }
        @discardableResult func exec(_ sql: String) -> Int32 {
            let rc = sqlite3_exec(h, sql, nil, nil, nil)
            #expect(rc == SQLITE_OK, "\(sql.prefix(60)): \(String(cString: sqlite3_errmsg(h)))")
            return rc
        }
        func text(_ sql: String) -> String? {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, sql, -1, &stmt, nil) == SQLITE_OK else {
                return "prepare: " + String(cString: sqlite3_errmsg(h))
            }
            defer { sqlite3_finalize(stmt) }
            let rc = sqlite3_step(stmt)
            guard rc == SQLITE_ROW else { return "step \(rc): " + String(cString: sqlite3_errmsg(h)) }
            return sqlite3_column_text(stmt, 0).map { String(cString: $0) }
        }
        deinit { sqlite3_close_v2(h) }
    }

    private let folders = TempFolders(prefix: "assetd-walc-")

    private func tempDir() throws -> String { try folders.make() }

    /// What a kill -9 leaves: the database and WAL as the kernel has them, no wal-index;
    /// opened (and recovered) in a folder of its own.
    private func crashCopy(_ dbPath: String) throws -> Conn {
        let copyDir = try tempDir()
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: dbPath + suffix) {
            try FileManager.default.copyItem(atPath: dbPath + suffix, toPath: copyDir + "/db.sqlite" + suffix)
        }
        return try Conn(copyDir + "/db.sqlite")
    }

    private func setUp(_ c: Conn) {
        c.exec("PRAGMA journal_mode = WAL")
        c.exec("PRAGMA synchronous = NORMAL")
        c.exec("PRAGMA wal_autocheckpoint = 0")
        c.exec("CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)")
    }

    /// The copy is taken when the commit is published, before SQLite releases the write lock
    /// (other connections may read it: a crash must not lose it). In exclusive locking mode
    /// SQLite takes no wal-index locks, so nothing but the writes tell the VFS a commit is done;
    /// the copy is taken after COMMIT returns.
    @Test(
        "a spilled transaction whose commit rewrites spilled frames (and so their checksums) is whole in the file when COMMIT returns",
        arguments: ["NORMAL", "EXCLUSIVE"])
    func rewrittenChecksums(lockingMode: String) throws {
        let dir = try tempDir()
        let w = try Conn(dir + "/db.sqlite")
        w.exec("PRAGMA locking_mode = \(lockingMode)")
        setUp(w)
        w.exec("INSERT INTO t VALUES (0, zeroblob(10))")
        // 10 pages of cache: the inserts spill to the WAL; the last update changes page 2 (and
        // the interior pages) again, which SQLite then rewrites in place in the WAL, and so
        // rewrites the checksums of every frame after it, the commit frame's header last.
        w.exec("PRAGMA cache_size = 10")
        let copied = Mutex<Conn?>(nil)
        if lockingMode == "NORMAL" {
            onWriteUnlock(w.h) { [self] in copied.withLock { $0 = try? crashCopy(dir + "/db.sqlite") } }
        }
        w.exec(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO t SELECT i, randomblob(3000) FROM n;
            UPDATE t SET v = zeroblob(20) WHERE k = 0;
            COMMIT
            """)
        onWriteUnlock(w.h, nil)
        // (The writer reads nothing before the copy: a read of the WAL would write its buffer.)
        let copy = try copied.withLock { $0 } ?? crashCopy(dir + "/db.sqlite")
        #expect(copy.text("PRAGMA integrity_check") == "ok")
        #expect(copy.text("SELECT COUNT(*) FROM t") == "301", "the committed transaction is lost by recovery")
        #expect(w.text("SELECT COUNT(*) FROM t") == "301")
    }

    @Test("a rolled-back spilled transaction's frames never land on frames another connection committed since")
    func rolledBackSpillAndAnotherWriter() throws {
        let dir = try tempDir()
        let w1 = try Conn(dir + "/db.sqlite")
        setUp(w1)
        let w2 = try Conn(dir + "/db.sqlite")
        w2.exec("PRAGMA wal_autocheckpoint = 0")
        w1.exec("INSERT INTO t VALUES (0, zeroblob(10))")
        // Everything checkpointed: the next transaction restarts the WAL, and page 1 comes from
        // the database file (a rollback re-reads it, which would otherwise read the WAL).
        w1.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        w1.exec("PRAGMA cache_size = 10")
        w1.exec(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
                INSERT INTO t SELECT i, randomblob(3000) FROM n;
            ROLLBACK
            """)
        // The other writer appends where the abandoned frames were.
        try expectOtherWriterKept(w1, w2, dir)
    }

    /// `w2` appends 200 rows to the one `w1` committed; then `w1` (reading the WAL again), a
    /// new connection and a crash copy all find the 201 rows, intact.
    private func expectOtherWriterKept(_ w1: Conn, _ w2: Conn, _ dir: String) throws {
        w2.exec(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
                INSERT INTO t SELECT 1000 + i, randomblob(3000) FROM n
            """)
        #expect(w1.text("SELECT COUNT(*) FROM t") == "201")
        let r = try Conn(dir + "/db.sqlite")
        #expect(r.text("PRAGMA integrity_check") == "ok")
        #expect(r.text("SELECT COUNT(*) FROM t") == "201")
        let copy = try crashCopy(dir + "/db.sqlite")
        #expect(copy.text("PRAGMA integrity_check") == "ok")
        #expect(copy.text("SELECT COUNT(*) FROM t") == "201")
    }

    /// In exclusive locking mode SQLite takes no wal-index locks; another connection can write
    /// only once this one has left the mode and released its database file lock.
    @Test(
        "a rolled-back spilled transaction in exclusive locking mode leaves nothing to land on another writer's frames after the mode is left"
    )
    func rolledBackSpillExclusive() throws {
        let dir = try tempDir()
        let w1 = try Conn(dir + "/db.sqlite")
        setUp(w1)
        w1.exec("INSERT INTO t VALUES (0, zeroblob(10))")
        w1.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        w1.exec("PRAGMA locking_mode = EXCLUSIVE")
        w1.exec("PRAGMA cache_size = 10")
        w1.exec(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
                INSERT INTO t SELECT i, randomblob(3000) FROM n;
            ROLLBACK
            """)
        w1.exec("PRAGMA locking_mode = NORMAL")
        #expect(w1.text("SELECT COUNT(*) FROM t") == "1")  // releases the exclusive lock
        let w2 = try Conn(dir + "/db.sqlite")
        w2.exec("PRAGMA wal_autocheckpoint = 0")
        try expectOtherWriterKept(w1, w2, dir)
    }

    @Test(
        "with psow=0 and synchronous FULL (commit padded to a sector and synced mid-frame) the commit is readable by another connection at once"
    )
    func paddedCommitVisible() throws {
        let dir = try tempDir()
        let uri = "file:" + dir + "/db.sqlite?psow=0"
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let w = try Conn(uri, flags: flags)
        setUp(w)
        w.exec("PRAGMA synchronous = FULL")
        let r = try Conn(uri, flags: flags)
        for round in 0..<12 {
            w.exec("INSERT INTO t VALUES (\(round), randomblob(\(500 + 700 * round)))")
            #expect(r.text("SELECT COUNT(*) FROM t") == "\(round + 1)", "round \(round)")
            #expect(r.text("PRAGMA integrity_check") == "ok", "round \(round)")
        }
    }

    /// Read by another connection when the commit is published, before SQLite releases the
    /// write lock (on another thread, a reader could run just then). With 512-byte pages the
    /// write split at the sync point sometimes leaves a 24-byte rest of a page, which is not
    /// a frame header.
    @Test(
        "with psow=0 and synchronous FULL, a commit is whole in the file when it is published, to a reader on either VFS",
        arguments: [512, 4096], [WALCoalescing.vfsName, nil])
    func paddedCommitPublished(pageSize: Int, readerVFS: String?) throws {
        let dir = try tempDir()
        let uri = "file:" + dir + "/db.sqlite?psow=0"
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let w = try Conn(uri, flags: flags)
        w.exec("PRAGMA page_size = \(pageSize)")
        setUp(w)
        w.exec("PRAGMA synchronous = FULL")
        let r = try Conn(uri, flags: flags, vfs: readerVFS)
        let seen = Mutex<[String]>([])
        onWriteUnlock(w.h) {
            seen.withLock { $0.append(r.text("SELECT COUNT(*) FROM t WHERE hex(substr(v, -8)) <> ''") ?? "nil") }
        }
        defer { onWriteUnlock(w.h, nil) }
        var failed = 0
        for round in 0..<200 where failed < 5 {
            w.exec("INSERT INTO t VALUES (\(round), randomblob(\(20 + (round * 677) % 3000)))")
            let last = seen.withLock { $0.last }
            if last != "\(round + 1)" { failed += 1 }
            #expect(last == "\(round + 1)", "round \(round)")
        }
    }

    /// `othersVFS`: the reader's and the checkpointer's (nil: SQLite's default, as in another program).
    @Test(
        "page sizes, spills, checkpoints of every mode (WAL restarts, truncation), journal_size_limit, persistent WAL: every commit readable at once and in a crash copy",
        arguments: [512, 4096, 65536], [WALCoalescing.vfsName, nil])
    func lifecycle(pageSize: Int, othersVFS: String?) throws {
        let dir = try tempDir()
        let path = dir + "/db.sqlite"
        var expected = 1
        do {
            let w = try Conn(path)
            w.exec("PRAGMA page_size = \(pageSize)")
            setUp(w)
            w.exec("PRAGMA journal_size_limit = 65536")
            var persist: Int32 = 1
            #expect(sqlite3_file_control(w.h, "main", SQLITE_FCNTL_PERSIST_WAL, &persist) == SQLITE_OK)
            w.exec("INSERT INTO t VALUES (0, zeroblob(10))")
            let checkpointer = try Conn(path, vfs: othersVFS)
            let r = try Conn(path, vfs: othersVFS)
            let modes = [
                SQLITE_CHECKPOINT_PASSIVE, SQLITE_CHECKPOINT_FULL, SQLITE_CHECKPOINT_RESTART,
                SQLITE_CHECKPOINT_TRUNCATE,
            ]
            for round in 0..<24 {
                let count = [1, 40, 300][round % 3]
                // Every other round spills (and rewrites row 0's page after spilling it).
                w.exec("PRAGMA cache_size = \(round % 2 == 1 ? 10 : -2000)")
                w.exec(
                    """
                    BEGIN;
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
                        INSERT INTO t SELECT \(round * 1000) + i, randomblob(\(50 + (round * 331) % 3000)) FROM n;
                    UPDATE t SET v = randomblob(\(round + 1)) WHERE k = 0;
                    COMMIT
                    """)
                expected += count
                #expect(
                    r.text("SELECT COUNT(*) FROM t WHERE hex(substr(v, -4)) <> ''") == "\(expected)", "round \(round)")
                let copy = try crashCopy(path)
                #expect(copy.text("PRAGMA integrity_check") == "ok", "round \(round)")
                #expect(copy.text("SELECT COUNT(*) FROM t") == "\(expected)", "round \(round)")
                let mode = modes[round % 4]
                let rc = sqlite3_wal_checkpoint_v2(checkpointer.h, nil, mode, nil, nil)
                #expect(rc == SQLITE_OK, "round \(round) mode \(mode): \(rc)")
            }
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "persistent WAL")
        let again = try Conn(path)
        #expect(again.text("PRAGMA integrity_check") == "ok")
        #expect(again.text("SELECT COUNT(*) FROM t") == "\(expected)")
    }

    // MARK: write errors, injected through the unix VFS's system calls

    /// Files (device and inode) whose writes fail with ENOSPC: how many may still succeed, how
    /// many failed.
    private static let failing = Mutex<[[UInt64]: (allowed: Int, failed: Int)]>([:])
    private static let originals = Mutex<[String: sqlite3_syscall_ptr]>([:])
    private static let installed: Void = {
        let unix = sqlite3_vfs_find("unix")!
        typealias PWrite = @convention(c) (Int32, UnsafeRawPointer?, Int, Int) -> Int
        typealias Write = @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int
        func shouldFail(_ fd: Int32) -> Bool {
            var st = stat()
            guard fstat(fd, &st) == 0 else { return false }
            return failing.withLock { files in
                let key = [UInt64(st.st_dev), UInt64(st.st_ino)]
                guard var f = files[key] else { return false }
                defer { files[key] = f }
                if f.allowed > 0 { f.allowed -= 1; return false }
                f.failed += 1
                return true
            }
        }
        let pwrite: PWrite = { fd, buf, n, off in
            if shouldFail(fd) { errno = ENOSPC; return -1 }
            let real = unsafeBitCast(originals.withLock { $0["pwrite"] }!, to: PWrite.self)
            return real(fd, buf, n, off)
        }
        let pwrite64: PWrite = { fd, buf, n, off in
            if shouldFail(fd) { errno = ENOSPC; return -1 }
            let real = unsafeBitCast(originals.withLock { $0["pwrite64"] }!, to: PWrite.self)
            return real(fd, buf, n, off)
        }
        let write: Write = { fd, buf, n in
            if shouldFail(fd) { errno = ENOSPC; return -1 }
            let real = unsafeBitCast(originals.withLock { $0["write"] }!, to: Write.self)
            return real(fd, buf, n)
        }
        for (name, fn) in [
            ("pwrite", unsafeBitCast(pwrite, to: sqlite3_syscall_ptr.self)),
            ("pwrite64", unsafeBitCast(pwrite64, to: sqlite3_syscall_ptr.self)),
            ("write", unsafeBitCast(write, to: sqlite3_syscall_ptr.self)),
        ] {
            guard let original = unix.pointee.xGetSystemCall(unix, name) else { continue }
            originals.withLock { $0[name] = original }
            _ = unix.pointee.xSetSystemCall(unix, name, fn)
        }
    }()

    /// Makes writes to `path` fail after `allowed` more (nil: succeed again); returns how many
    /// failed since the last call.
    private func failWrites(to path: String, after allowed: Int?) -> Int {
        _ = Self.installed
        var st = stat()
        #expect(stat(path, &st) == 0)
        let key = [UInt64(st.st_dev), UInt64(st.st_ino)]
        return Self.failing.withLock { files in
            let failed = files[key]?.failed ?? 0
            files[key] = allowed.map { ($0, 0) }
            return failed
        }
    }

    @Test(
        "a commit whose WAL writes fail (ENOSPC) reports SQLITE_FULL and leaves nothing behind, whichever write fails",
        arguments: [0, 1, 2, 3])
    func writeErrors(allowed: Int) throws {
        let dir = try tempDir()
        let w = try Conn(dir + "/db.sqlite")
        setUp(w)
        w.exec("INSERT INTO t VALUES (0, randomblob(100))")
        let r = try Conn(dir + "/db.sqlite")
        #expect(r.text("SELECT COUNT(*) FROM t") == "1")
        // 200 rows of 3000 bytes: over 600 KiB of frames, several writes of 124 KiB at commit.
        let wal = dir + "/db.sqlite-wal"
        _ = failWrites(to: wal, after: allowed)
        let rc = sqlite3_exec(
            w.h,
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
                INSERT INTO t SELECT i, randomblob(3000) FROM n
            """, nil, nil, nil)
        let failed = failWrites(to: wal, after: nil)
        #expect(failed > 0)
        #expect(rc & 0xff == SQLITE_FULL, "\(rc): \(String(cString: sqlite3_errmsg(w.h)))")
        #expect(r.text("SELECT COUNT(*) FROM t") == "1")
        #expect(w.text("SELECT COUNT(*) FROM t") == "1")
        w.exec("INSERT INTO t VALUES (1000, randomblob(100))")
        #expect(r.text("SELECT COUNT(*) FROM t") == "2")
        let copy = try crashCopy(dir + "/db.sqlite")
        #expect(copy.text("PRAGMA integrity_check") == "ok")
        #expect(copy.text("SELECT COUNT(*) FROM t") == "2")
    }
}
