// A schema upgrade that writes an index over every file row (v11) on a nearly full state
// disk: it cannot finish there, and spending the reserve on it left a disk with no reserve
// and a daemon that failed every start (assetd(8), FULL DISK). It is refused before it
// starts, naming the space it needs. Needs a tmpfs for the state disk (CAP_SYS_ADMIN).

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Glibc
import Synchronization
import Testing

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct UpgradeSpaceTests {
    /// Makes the fixture's database a v10 one with `files` registry rows.
    static func v10Store(_ f: Fixture, files: Int) throws {
        let pool = try MigrationTests.rebuild(f, as: "v10")
        try pool.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO file (path, size, device, inode, mtime, missing, first_seen)
                    SELECT '/var/cache/app/d' || (i % 100) || '/file' || i || '.bin', i * 7919 % 1073741824,
                        2049, 1000000 + i, 1.7e9, 0, 1 FROM n
                    """, arguments: [files])
        }
        try pool.close()
    }

    /// Fills the disk holding `folder` but for `free` bytes.
    static func fill(_ folder: String, leaving free: Int64) {
        let filler = folder + "/filler"
        Tmpfs.fill(filler)
        var st = stat()
        #expect(stat(filler, &st) == 0 && truncate(filler, st.st_size - off_t(free)) == 0)
    }

    /// The database's and its WAL's sizes.
    static func bytes(_ path: String) -> Int64 {
        ["", "-wal"].reduce(0) { sum, suffix in
            var st = stat()
            return sum + (stat(path + suffix, &st) == 0 ? Int64(st.st_size) : 0)
        }
    }

    static func applied(_ path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try Schema.migrator().appliedIdentifiers(db) }.sorted()
    }

    @Test(
        "an upgrade whose index a nearly full state disk cannot hold is refused before it starts, naming the space, the reserve kept; with room it runs"
    )
    func upgradeRefusedOnNearlyFullDisk() throws {
        nonisolated(unsafe) var state = ""
        let f = try Fixture { c in
            state = (c.roots[0] as NSString).deletingLastPathComponent + "/state"
            precondition(Tmpfs.mount(state, mib: 16), "cannot mount a tmpfs on \(state)")
        }
        defer {
            f.store?.close()
            Tmpfs.unmount(state)
            withExtendedLifetime(f) {}
        }
        let ballast = f.dbPath + ".ballast"
        #expect(f.exists(ballast), "the reserve: a sixteenth of the disk, 1 MiB")
        // About 20 bytes of index a row: 1.2 MB in the WAL, as much again in the file.
        try Self.v10Store(f, files: 60_000)
        Self.fill(state, leaving: 1 << 20)
        f.store = nil
        let e = expectCode(.storageFull) { try Store(path: f.dbPath, configuration: f.configuration) }
        guard case .int(let needs) = e?.detail?["upgrade_needs"] else {
            Issue.record("no upgrade_needs: \(String(describing: e))")
            return
        }
        #expect(e?.message.contains("schema upgrade") == true, "\(String(describing: e))")
        #expect(f.exists(ballast), "the reserve went to an upgrade that could not finish")
        #expect(try Self.applied(f.dbPath).contains("v11") == false)
        // Refused the same way until there is room, then it runs.
        #expect(expectCode(.storageFull) { try Store(path: f.dbPath, configuration: f.configuration) } != nil)
        #expect(unlink(state + "/filler") == 0)
        // The estimate must be an upper bound: an under-estimate would let the upgrade take the
        // reserve. The database and its WAL are weighed as v11 ends (before any checkpoint
        // can shrink the WAL) and once the store is open.
        let before = Self.bytes(f.dbPath)
        let peak = Mutex<Int64>(0)
        let path = f.dbPath
        f.store = try Store(path: f.dbPath, configuration: f.configuration) { p in
            if p.done == p.total { peak.withLock { $0 = max($0, Self.bytes(path)) } }
        }
        let grown = max(peak.withLock { $0 }, Self.bytes(f.dbPath)) - before
        #expect(grown > 0 && grown <= needs, "grew \(grown) bytes, estimated \(needs)")
        #expect(try Self.applied(f.dbPath).contains("v12"))
        #expect(f.exists(ballast))
    }
}

/// The room an upgrade may take, as root and not: ext4 keeps blocks (5% by default) that only
/// root can write, and the daemon runs as root. A disk full for users but not for root ran
/// the upgrade before it was ever refused; it must still.
struct UpgradeRoomAsRootTests {
    @Test("as root the upgrade may take the root-only blocks (f_bfree); as another user only f_bavail")
    func rootCountsReservedBlocks() {
        var vfs = statvfs()
        vfs.f_frsize = 4096
        vfs.f_bfree = 1000
        vfs.f_bavail = 0
        #expect(Reserve.writable(vfs, euid: 0) == 4_096_000)
        #expect(Reserve.writable(vfs, euid: 1000) == 0)
    }
}
