// The WAL write-coalescing VFS (Sources/CWALCoalesce): fewer writes, and the WAL file on disk
// exactly as SQLite would have left it whenever another connection, or a crash, could look.

import CWALCoalesce
import Foundation
import GRDB
import GRDBSQLite
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

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
                try Int.fetchOne(r.db, sql: "SELECT SUM(length(value)) FROM object WHERE collection = ?", arguments: ["r\(round)"])
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
                (try String.fetchOne(db, sql: "PRAGMA integrity_check"), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object"))
            }
            #expect(check == "ok", "round \(round)")
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
}
