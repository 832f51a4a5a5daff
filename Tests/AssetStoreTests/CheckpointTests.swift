// Checkpoints run beside the writer: past 4,000 WAL frames a background checkpoint copies
// the WAL into the database file, and the WAL starts over instead of growing.

import Foundation
import GRDBSQLite
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct CheckpointTests {
    func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

    @Test("past 4,000 WAL frames a background checkpoint fills the database file, and the WAL is reused")
    func backgroundCheckpoint() throws {
        let f = try Fixture()
        let before = size(f.dbPath)
        let filler = String(repeating: "x", count: 3000)  // about a page per object
        var i = 0
        // Until the checkpointer has run once (each commit adds frames; 4,000 start it).
        while f.store.checkpointer.completed.load(ordering: .relaxed) == 0 && i < 4000 {
            try f.put((0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(filler)]) })
            i += 1
            f.store.checkpointer.drain()  // so the checkpoint it started covers the whole WAL
        }
        f.store.checkpointer.drain()
        #expect(f.store.checkpointer.completed.load(ordering: .relaxed) >= 1)
        // The pages reached the database file without any explicit checkpoint.
        #expect(size(f.dbPath) > before + 2_000_000)
        // Once checkpointed, later commits restart the WAL instead of appending past its end.
        let walBefore = size(f.dbPath + "-wal")
        for k in 0..<5 { try f.put([(ref("c", "after\(k)"), 1)]) }
        #expect(size(f.dbPath + "-wal") <= walBefore)
        #expect(try f.store.read { try $0.get(ref("c", "k0-0")) } != nil)
    }

    @Test("closing the store waits for a running checkpoint and stops the checkpointer")
    func closeStops() throws {
        let f = try Fixture()
        for i in 0..<60 {
            try f.put(
                (0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(String(repeating: "y", count: 3000))]) })
        }
        f.store.close()
        let n = f.store.checkpointer.completed.load(ordering: .relaxed)
        f.store.checkpointer.drain()
        #expect(f.store.checkpointer.completed.load(ordering: .relaxed) == n)
    }

    @Test(
        "under a stream of commits the WAL still starts over: the writer copies the last frames a background run left")
    func cycleEndsUnderLoad() throws {
        let f = try Fixture()
        let filler = String(repeating: "z", count: 3000)  // about a page per object
        var largest: Int32 = 0
        // About 24,000 frames in commits of ~25, back to back: a background run never sees
        // the whole WAL copied before the next commit begins, so without the writer's finish
        // the WAL would grow to the inline limit (16,000 frames).
        for i in 0..<1000 {
            try f.put((0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(filler)]) })
            largest = max(largest, f.store.checkpointer.lastFrames.load(ordering: .relaxed))
        }
        #expect(f.store.checkpointer.finished.load(ordering: .relaxed) >= 1)
        #expect(largest < Checkpointer.inlineThreshold / 2)
        #expect(try f.store.read { try $0.get(ref("c", "k999-19")) } != nil)
    }

    @Test("while a reader holds an old snapshot, background checkpoints do not run after every commit")
    func stalledCheckpointWaits() throws {
        let f = try Fixture()
        try f.put([(ref("c", "first"), 1)])
        // A reader's snapshot from before the stream: no checkpoint can copy past it.
        var reader: OpaquePointer?
        #expect(sqlite3_open_v2(f.dbPath, &reader, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(reader) }
        #expect(sqlite3_exec(reader, "BEGIN; SELECT COUNT(*) FROM object;", nil, nil, nil) == SQLITE_OK)
        let filler = String(repeating: "w", count: 3000)
        var commitsPastThreshold = 0
        for i in 0..<400 {
            try f.put((0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(filler)]) })
            f.store.checkpointer.drain()  // each run finishes before the next commit: runs are counted exactly
            if f.store.checkpointer.lastFrames.load(ordering: .relaxed) >= Checkpointer.backgroundThreshold {
                commitsPastThreshold += 1
            }
        }
        #expect(commitsPastThreshold > 150)
        // A run or two at the threshold, then one per 4,000 more frames: a handful, not one
        // per commit.
        #expect(f.store.checkpointer.completed.load(ordering: .relaxed) <= 5)
        _ = sqlite3_exec(reader, "COMMIT", nil, nil, nil)
    }

    @Test("a checkpoint that fails is counted and its error kept, and the next one that can run does")
    func failedCheckpointIsReported() throws {
        let f = try Fixture()
        try f.put([(ref("c", "first"), 1)])
        #expect(f.store.walStatus.checkpointFailures == 0)
        // The background checkpoint opens its own connection on first use, by path: with the
        // database moved away that open fails (not busy: it would never succeed by waiting).
        let moved = f.dbPath + ".moved"
        #expect(rename(f.dbPath, moved) == 0)
        let filler = String(repeating: "m", count: 3000)
        var i = 0
        while f.store.checkpointer.lastFrames.load(ordering: .relaxed) < Checkpointer.backgroundThreshold + 200 {
            try f.put((0..<20).map { j in (ref("c", "k\(i)-\(j)"), ["pad": .string(filler)]) })
            i += 1
        }
        f.store.checkpointer.drain()
        let failed = f.store.walStatus
        // Once, not once per commit past the threshold: the next try waits for 4,000 frames more.
        #expect(failed.checkpointFailures == 1)
        #expect(
            failed.lastCheckpointError?.contains("open for checkpoint") == true,
            "\(failed.lastCheckpointError ?? "nil")")
        #expect(failed.frames >= Int(Checkpointer.backgroundThreshold))
        let stats = try f.store.statistics().json
        #expect(stats["wal"]?["checkpoint_failures"]?.intValue == Int64(failed.checkpointFailures))

        // Back in place: the next run, 4,000 frames on, opens, copies, and counts no failure.
        #expect(rename(moved, f.dbPath) == 0)
        let before = f.store.checkpointer.completed.load(ordering: .relaxed)
        for k in 0..<400 where f.store.checkpointer.completed.load(ordering: .relaxed) == before {
            try f.put((0..<20).map { j in (ref("c", "after-\(k)-\(j)"), ["pad": .string(filler)]) })
            f.store.checkpointer.drain()
        }
        #expect(f.store.checkpointer.completed.load(ordering: .relaxed) > before)
        #expect(f.store.walStatus.checkpointFailures == failed.checkpointFailures)
    }
}
