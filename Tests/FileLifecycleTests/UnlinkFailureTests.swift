// Failed unlinks (assetd(8), DATA MODEL, The unlink queue): a real obstacle (an immutable file as
// root, a read-only folder otherwise) makes unlinkat fail; the row stays with its error and attempt
// count, retries back off from 1 s doubling to one hour, and the file goes once the obstacle does.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

/// A fixture whose file `a/one.bin` is queued for unlinking and blocked by an obstacle.
struct BlockedUnlink {
    let f: Fixture
    let path: String
    let obstacle: UnlinkObstacle

    init() throws {
        f = try Fixture()
        path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        obstacle = try UnlinkObstacle(path, in: f)
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
    }

    func row() throws -> PendingUnlink {
        let rows = try f.store.pending()
        try #require(rows.count == 1)
        return rows[0]
    }
}

@Suite struct UnlinkFailureTests {
    @Test("a failed unlink keeps its row with the error, one attempt and a retry one second later")
    func firstFailure() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        let queuedAt = b.f.clock.now
        b.f.clock.advance(5)
        let now = b.f.clock.now

        let sweep = try b.f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.isEmpty)
        #expect(sweep.pending == 1)
        let failed = try #require(sweep.failed.first)
        #expect(sweep.failed.count == 1)
        #expect(failed.path == b.path)
        #expect(failed.attempts == 1)
        #expect(UnlinkObstacle.errorNames.contains { failed.error.contains($0) }, "\(failed.error)")

        let row = try b.row()
        #expect(row.path == b.path)
        #expect(row.queuedAt == queuedAt)
        #expect(row.attempts == 1)
        let error = try #require(row.lastError)
        #expect(UnlinkObstacle.errorNames.contains { error.contains($0) }, "\(error)")
        #expect(row.nextAttempt == now + 1)
        #expect(row.json["attempts"] == 1)
        #expect(row.json["last_error"] == .string(error))
        #expect(b.f.exists(b.path))
        #expect(try b.f.store.counters()["unlink_failures"] == 1)
        #expect(try b.f.store.counters()["unlinked"] == 0)
    }

    @Test("a sweep before the next attempt time does not retry")
    func noEarlyRetry() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        let next = try b.row().nextAttempt
        b.f.clock.advance(0.9)
        let sweep = try b.f.store.sweep()
        #expect(sweep.failed.isEmpty)
        #expect(sweep.pending == 1)
        #expect(try b.row().attempts == 1)
        #expect(try b.row().nextAttempt == next)
        #expect(try b.f.store.counters()["unlink_failures"] == 1)
    }

    @Test("each retry that fails doubles the wait: 1, 2, 4, 8 seconds")
    func retriesDoubleTheDelay() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        var delays = [try b.row().nextAttempt - b.f.clock.now]
        for _ in 0..<3 {
            let wait = try b.row().nextAttempt - b.f.clock.now
            b.f.clock.advance(wait / 2)
            #expect(try b.f.store.sweep().failed.isEmpty)
            b.f.clock.advance(wait / 2)
            #expect(try b.f.store.sweep().failed.count == 1)
            delays.append(try b.row().nextAttempt - b.f.clock.now)
        }
        #expect(delays == [1, 2, 4, 8])
        #expect(try b.row().attempts == 4)
        #expect(try b.f.store.counters()["unlink_failures"] == 4)
        #expect(b.f.exists(b.path))
    }

    @Test("sweep(retryFailed:) retries a failed row at once")
    func retryFailedAtOnce() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        #expect(try b.f.store.sweep().failed.isEmpty)
        let sweep = try b.f.store.sweep(retryFailed: true)
        #expect(sweep.failed.map(\.attempts) == [2])
        #expect(try b.row().attempts == 2)
        #expect(try b.row().nextAttempt == b.f.clock.now + 2)
        #expect(try b.f.store.counters()["unlink_failures"] == 2)
    }

    @Test("the wait between attempts is capped at one hour")
    func retryDelayCapped() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        var delays = [Double]()
        for _ in 0..<20 {
            _ = try b.f.store.sweep(retryFailed: true)
            delays.append(try b.row().nextAttempt - b.f.clock.now)
        }
        let expected = (0..<20).map { min(Store.maximumRetryDelay, Double(1 << $0)) }
        #expect(delays == expected)
        #expect(Store.maximumRetryDelay == 3600)
        #expect(delays.max() == 3600)
        #expect(try b.row().attempts == 20)
        #expect(try b.f.store.counters()["unlink_failures"] == 20)
    }

    @Test("once the obstacle is gone the next due sweep unlinks the file", arguments: [false, true])
    func obstacleRemoved(retryAtOnce: Bool) throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        _ = try b.f.store.sweep(retryFailed: true)
        b.obstacle.remove()

        let sweep: SweepReport
        if retryAtOnce {
            sweep = try b.f.store.sweep(retryFailed: true)
        } else {
            #expect(try b.f.store.sweep().unlinked.isEmpty)
            b.f.clock.advance(2)
            sweep = try b.f.store.sweep()
        }
        #expect(sweep.unlinked == [b.path])
        #expect(sweep.failed.isEmpty)
        #expect(sweep.pending == 0)
        #expect(try b.f.store.pending().isEmpty)
        #expect(!b.f.exists(b.path))
        let counters = try b.f.store.counters()
        #expect(counters["unlinked"] == 1)
        #expect(counters["unlink_failures"] == 2)
    }

    @Test("a failed row survives a restart and the drain at open retries it when due")
    func failedRowSurvivesRestart() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        try b.f.reopen(drain: true)
        #expect(try b.row().attempts == 1)
        b.obstacle.remove()
        b.f.clock.advance(1)
        try b.f.reopen(drain: true)
        #expect(try b.f.store.pending().isEmpty)
        #expect(!b.f.exists(b.path))
    }

    @Test("a failed row referenced again is dropped and the file kept")
    func failedRowReferencedAgain() throws {
        let b = try BlockedUnlink()
        defer { b.obstacle.remove() }
        _ = try b.f.store.sweep()
        try b.f.hold(b.path, key: "again")
        #expect(try b.f.store.pending().isEmpty)
        let sweep = try b.f.store.sweep(retryFailed: true)
        #expect(sweep.failed.isEmpty)
        #expect(try b.f.store.pending().isEmpty)
        #expect(b.f.exists(b.path))
    }
}
