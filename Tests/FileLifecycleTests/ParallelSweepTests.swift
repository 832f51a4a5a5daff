// The sweep unlinks a batch's files on several threads, then records every row in queue
// order: all files go, each on some thread; leases taken before or during the sweep keep
// their files; a failing unlink is recorded with its attempt while the rest succeed; rows
// whose path is referenced again are dropped and their files kept.

import Foundation
import GRDB
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// Files in `folders` folders of `perFolder`, each held by one object, all deleted in one
/// commit; returns the paths in queue order.
private func queueFiles(_ f: Fixture, folders: Int, perFolder: Int, prefix: String = "d") throws -> [String] {
    var paths = [String]()
    for d in 0..<folders {
        for i in 0..<perFolder { paths.append(try f.makeFile("\(prefix)\(d)/f\(i).bin", size: 10 + i)) }
    }
    try f.store.write { tx in
        for (n, p) in paths.enumerated() { try tx.put(ref("c", "\(prefix)\(n)"), value: ["file": .string(p)]) }
    }
    let queued = try f.store.write { tx in
        for n in paths.indices { try tx.delete(ref("c", "\(prefix)\(n)")) }
    }.report.filesQueued
    #expect(Set(queued) == Set(paths))
    return queued
}

/// Writes a queue row by hand, past the transactions that would cancel it.
private func insertRowByHand(_ f: Fixture, path: String) throws {
    var config = GRDB.Configuration()
    config.busyMode = .timeout(5)
    let q = try DatabaseQueue(path: f.dbPath, configuration: config)
    try q.write { db in
        try db.execute(
            sql:
                "INSERT INTO unlink_queue (path, device, inode, commit_no, queued_at, next_attempt) VALUES (?, 0, 0, 0, 0, 0)",
            arguments: [path])
    }
    try q.close()
}

/// The threads that unlinked, as `beforeUnlink` saw them.
private final class ThreadLog: Sendable {
    private let seen = Mutex<[pthread_t: Int]>([:])
    func note() { seen.withLock { $0[pthread_self(), default: 0] += 1 } }
    var threads: Int { seen.withLock { $0.count } }
    var files: Int { seen.withLock { $0.values.reduce(0, +) } }
}

@Suite("parallel sweep")
struct ParallelSweepTests {
    @Test("a sweep over many files in many folders unlinks them all on several threads and records each row")
    func manyFilesManyThreads() throws {
        let f = try Fixture()
        let paths = try queueFiles(f, folders: 40, perFolder: 30)
        let log = ThreadLog()
        let sweep = try f.store.sweep(retryFailed: false, batch: 1000, threads: 16) { _ in log.note() }
        #expect(sweep.unlinked == paths, "recorded in queue order")
        #expect(sweep.failed.isEmpty && sweep.skipped.isEmpty && sweep.deferred.isEmpty)
        #expect(sweep.pending == 0)
        #expect(paths.allSatisfy { !f.exists($0) })
        #expect(log.files == paths.count)
        #expect(log.threads > 1, "unlinked on \(log.threads) thread(s)")
        #expect(try f.store.counters()["unlinked"] == Int64(paths.count))
        #expect(try f.store.pending().isEmpty)
    }

    @Test("batches smaller than the queue each run their unlinks in parallel and together take every file")
    func severalBatches() throws {
        let f = try Fixture()
        let paths = try queueFiles(f, folders: 12, perFolder: 50)
        let log = ThreadLog()
        let sweep = try f.store.sweep(retryFailed: false, batch: 128, threads: 8) { _ in log.note() }
        #expect(sweep.unlinked == paths)
        #expect(paths.allSatisfy { !f.exists($0) })
        #expect(log.threads > 1)
        #expect(try f.store.counters()["unlinked"] == Int64(paths.count))
    }

    @Test("a file leased before the sweep, and one leased while the sweep runs, are never unlinked")
    func leasesKeepTheirFiles() throws {
        let f = try Fixture()
        let paths = try queueFiles(f, folders: 10, perFolder: 40)
        let before = paths[7]
        let during = paths[250]
        _ = try f.store.leases.acquire(objects: [], files: [before], ttl: 600)
        let leases = f.store.leases
        let leasedDuring = Mutex<Lease?>(nil)
        // Taken after the batch read the leases, just before this file's own check and unlink.
        let sweep = try f.store.sweep(retryFailed: false, batch: 1000, threads: 16) { path in
            guard path == during else { return }
            let lease = try? leases.acquire(objects: [], files: [during], ttl: 300)
            leasedDuring.withLock { $0 = lease }
        }
        #expect(leasedDuring.withLock { $0 } != nil)
        #expect(f.exists(before))
        #expect(f.exists(during))
        #expect(sweep.unlinked == paths.filter { $0 != before && $0 != during })
        #expect(sweep.deferred.map(\.path) == [before, during])
        #expect(sweep.deferred.allSatisfy { $0.reason == .leased })
        #expect(try f.store.counters()["deferred_leased"] == 2)
        let rows = try f.store.pending()
        #expect(rows.map(\.path) == [before, during])
        #expect(rows.allSatisfy { $0.deferred == .leased && $0.attempts == 0 })
        // Kept until its lease's end: due again then, not before.
        #expect(rows[0].nextAttempt == f.clock.now + 600)
        #expect(rows[1].nextAttempt == f.clock.now + 300)
    }

    @Test("a failing unlink is recorded as failed with its attempt count while the others succeed")
    func oneFailureAmongMany() throws {
        let f = try Fixture()
        var paths = try queueFiles(f, folders: 6, perFolder: 40, prefix: "a")
        let blocked = try f.makeFile("blocked/one.bin")
        let replaced = try f.makeFile("replaced/one.bin")
        try f.hold(blocked, key: "blocked")
        try f.hold(replaced, key: "replaced")
        #expect(try f.delete(ref("c", "blocked"), ref("c", "replaced")).filesQueued == [blocked, replaced])
        paths += try queueFiles(f, folders: 6, perFolder: 40, prefix: "b")
        let obstacle = try UnlinkObstacle(blocked, in: f)
        defer { obstacle.remove() }
        // A non-empty folder in place of a queued file: another thing at the path, kept.
        #expect(unlink(replaced) == 0)
        try f.makeFile("replaced/one.bin/inside")

        let sweep = try f.store.sweep(retryFailed: false, batch: 1000, threads: 16)
        #expect(sweep.unlinked == paths)
        #expect(paths.allSatisfy { !f.exists($0) })
        #expect(sweep.failed.count == 1)
        let failure = try #require(sweep.failed.first)
        #expect(failure.path == blocked && failure.attempts == 1)
        #expect(UnlinkObstacle.errorNames.contains { failure.error.contains($0) }, "\(failure.error)")
        #expect(sweep.skipped.map(\.path) == [replaced])
        #expect(sweep.skipped.first?.reason == .identityChanged)
        #expect(f.exists(blocked) && f.exists(replaced + "/inside"))
        let rows = try f.store.pending()
        #expect(rows.map(\.path) == [blocked])
        #expect(rows.first?.attempts == 1)
        #expect(rows.first?.nextAttempt == f.clock.now + 1)
        let counters = try f.store.counters()
        #expect(counters["unlinked"] == Int64(paths.count))
        #expect(counters["unlink_failures"] == 1)
        #expect(counters["skipped_identity_changed"] == 1)

        // Retried once due: fails again, two attempts; then goes once the obstacle does.
        f.clock.advance(1)
        let again = try f.store.sweep(retryFailed: false, batch: 1000, threads: 16)
        #expect(again.failed.map(\.attempts) == [2])
        obstacle.remove()
        f.clock.advance(2)
        #expect(try f.store.sweep(retryFailed: false, batch: 1000, threads: 16).unlinked == [blocked])
        #expect(!f.exists(blocked))
    }

    @Test("rows whose path is referenced again are dropped and their files kept, among rows unlinked in parallel")
    func referencedAgainAmongMany() throws {
        let f = try Fixture()
        let held = try (0..<3).map { try f.makeFile("held/h\($0)") }
        try f.put(held.enumerated().map { (ref("c", "holder\($0.offset)"), ["file": .string($0.element)]) })
        // Queue order: a held row first, then files, a held row, files, a held row.
        try insertRowByHand(f, path: held[0])
        var paths = try queueFiles(f, folders: 5, perFolder: 40, prefix: "a")
        try insertRowByHand(f, path: held[1])
        paths += try queueFiles(f, folders: 5, perFolder: 40, prefix: "b")
        try insertRowByHand(f, path: held[2])

        let sweep = try f.store.sweep(retryFailed: false, batch: 1000, threads: 16)
        #expect(sweep.referencedAgain == held)
        #expect(sweep.unlinked == paths)
        #expect(held.allSatisfy(f.exists))
        #expect(paths.allSatisfy { !f.exists($0) })
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.counters()["unlinked"] == Int64(paths.count))
    }

    @Test("unlinks hold the lease gate shared: two run at once")
    func unlinksRunTogether() throws {
        let f = try Fixture()
        let a = try f.makeFile("a")
        let b = try f.makeFile("b")
        let leases = f.store.leases
        let inside = Mutex(0)
        let bothInside = Mutex(false)
        // Each waits (up to 60 s) for the other to be inside too: an exclusive gate never lets it.
        let wait: @Sendable () -> Bool = {
            inside.withLock { $0 += 1 }
            for _ in 0..<6000 {
                if inside.withLock({ $0 }) == 2 { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return false
        }
        let t = Thread { if leases.unlessLeased(file: b, wait) == true { bothInside.withLock { $0 = true } } }
        t.start()
        #expect(leases.unlessLeased(file: a, wait) == true)
        #expect(pollFor { bothInside.withLock { $0 } })
    }

    @Test("a waiting lease goes before unlinks that start after it: it waits only for those under way")
    func leaseIsNotStarved() throws {
        let f = try Fixture()
        let a = try f.makeFile("a")
        let b = try f.makeFile("b")
        let c = try f.makeFile("c")
        let leases = f.store.leases
        let events = Mutex<[String]>([])
        let release = Mutex(false)
        let aInside = Mutex(false)
        let first = Thread {
            _ = leases.unlessLeased(file: a) {
                aInside.withLock { $0 = true }
                while !release.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
                events.withLock { $0.append("a done") }
                return true
            }
        }
        first.start()
        while !aInside.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
        let leaseWaits = DispatchSemaphore(value: 0)
        leases.unlinkWaits.withLock { $0 = { leaseWaits.signal() } }
        let leaserThread = Mutex<pid_t>(0)
        let leaser = Thread {
            leaserThread.withLock { $0 = currentThreadID() }
            _ = try? leases.acquire(objects: [], files: [b], ttl: 60)
            events.withLock { $0.append("lease") }
        }
        leaser.start()
        // The lease found the gate held and is about to wait; then it sleeps, queued on the gate.
        #expect(leaseWaits.wait(timeout: .now() + 60) == .success)
        #expect(threadSleeps(leaserThread.withLock { $0 }), "the lease queued on the gate")
        let laterThread = Mutex<pid_t>(0)
        let later = Thread {
            laterThread.withLock { $0 = currentThreadID() }
            _ = leases.unlessLeased(file: c) {
                // Read inside: the lease thread records its own return only after the gate is free.
                let leased = leases.isLeased(file: b)
                events.withLock { $0.append(leased ? "c after the lease" : "c before the lease") }
                return true
            }
        }
        later.start()
        // Queued behind the lease before "a" ends (had it not, it would come after anyway).
        _ = pollFor { laterThread.withLock { $0 } != 0 }
        #expect(threadSleeps(laterThread.withLock { $0 }), "c waits at the gate")
        release.withLock { $0 = true }
        _ = pollFor { events.withLock { $0.count } >= 3 }
        let seen = events.withLock { $0 }
        #expect(seen.first == "a done" && seen.contains("c after the lease") && seen.contains("lease"), "\(seen)")
    }
}
