// The unlink pipeline (assetd(8), DATA MODEL, The unlink queue): a file is queued in the deleting
// transaction, removed only by a sweep (or the drain at open) after a durable commit and the
// configured delay, kept when referenced again, and never queued by a transaction that failed.

import Foundation
import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

struct Boom: Error {}

/// Ways a transaction that deleted the only holder of a file can fail.
enum FailedDelete: String, CaseIterable, Sendable {
    /// The body throws after the delete.
    case bodyThrows
    /// The body flushes (the file is queued inside the transaction), then throws.
    case bodyThrowsAfterFlush
    /// Another object's edge denies deleting the holder.
    case deleteDenied
    /// The holder's delete is flushed, then an edge names an object that does not exist.
    case danglingEdgeAfterFlush
    /// An edge names an object that does not exist.
    case danglingEdge

    /// Prepares other objects the failure needs (before the failing transaction).
    func prepare(_ f: Fixture, holder: ObjectRef) throws {
        guard self == .deleteDenied else { return }
        try f.store.write { tx in
            try tx.put(ref("pins", "p"), value: [:])
            try tx.addEdge(
                name: "pin", source: ref("pins", "p"), destination: .object(holder), rules: .denyDeleteDestination)
        }
    }

    func run(_ f: Fixture, holder: ObjectRef) -> Error? {
        do {
            try f.store.write { tx in
                try tx.delete(holder)
                switch self {
                case .bodyThrows:
                    throw Boom()
                case .bodyThrowsAfterFlush:
                    try tx.flush()
                    throw Boom()
                case .deleteDenied:
                    break
                case .danglingEdgeAfterFlush:
                    try tx.flush()
                    try tx.addEdge(
                        name: "x", source: ref("ghosts", "g"), destination: .object(ref("pins", "p")), rules: [])
                case .danglingEdge:
                    try tx.addEdge(
                        name: "x", source: ref("ghosts", "g"), destination: .object(ref("pins", "p")), rules: [])
                }
            }
            return nil
        } catch {
            return error
        }
    }

    func matches(_ error: Error?) -> Bool {
        switch self {
        case .bodyThrows, .bodyThrowsAfterFlush: return error is Boom
        case .deleteDenied: return (error as? StoreError)?.code == .deleteDenied
        case .danglingEdge, .danglingEdgeAfterFlush: return (error as? StoreError)?.code == .danglingEdge
        }
    }
}

@Suite struct UnlinkPipelineTests {
    @Test("deleting the only holder queues the file in the same transaction, and only the sweep removes it")
    func queuedInDeletingTransaction() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 100)
        try f.hold(path, key: "k")
        #expect(try f.store.pending().isEmpty)

        let del = try f.delete(ref("c", "k"))
        #expect(del.filesQueued == [path])
        #expect(del.deleted.map(\.ref) == [ref("c", "k")])
        let pending = try f.store.pending()
        #expect(pending.map(\.path) == [path])
        #expect(pending.first?.queuedAt == f.clock.now)
        #expect(pending.first?.attempts == 0)
        #expect(pending.first?.lastError == nil)
        #expect(pending.first?.nextAttempt == f.clock.now)
        #expect(
            pending.first?.json == [
                "path": .string(path), "queued_at": .double(f.clock.now), "attempts": 0, "last_error": nil,
                "next_attempt": .double(f.clock.now), "deferred": nil,
            ])
        #expect(try f.fileReport(path) == nil)
        #expect(f.exists(path))

        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path])
        #expect(sweep.pending == 0)
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.counters()["unlinked"] == 1)
        // A second sweep has nothing to do.
        let again = try f.store.sweep()
        #expect(again.unlinked.isEmpty && again.failed.isEmpty && again.skipped.isEmpty)
    }

    @Test(
        "a transaction that fails after deleting a holder leaves no queue row, the object and the file",
        arguments: FailedDelete.allCases)
    func failedTransactionQueuesNothing(failure: FailedDelete) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 100)
        let holder = ref("c", "k")
        try f.hold(path, key: "k")
        try failure.prepare(f, holder: holder)
        let commit = try f.store.read { try $0.lastCommit() }

        let error = failure.run(f, holder: holder)
        #expect(failure.matches(error), "unexpected outcome: \(String(describing: error))")

        #expect(try f.store.pending().isEmpty)
        #expect(try f.exists(holder))
        #expect(try f.store.read { try $0.lastCommit() } == commit)
        let report = try #require(try f.fileReport(path))
        #expect(report.edges.map(\.source) == [holder])
        #expect(try f.indexedSize(key: "k") == .int(100))
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
    }

    @Test("a file is not unlinked before files.unlink_delay has passed since its commit")
    func unlinkDelay() throws {
        let f = try Fixture { $0.unlinkDelay = 30 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let queuedAt = f.clock.now
        try f.delete(ref("c", "k"))
        #expect(try f.store.pending().first?.nextAttempt == queuedAt + 30)

        #expect(try f.store.sweep().unlinked.isEmpty)
        f.clock.advance(29.5)
        let early = try f.store.sweep()
        #expect(early.unlinked.isEmpty)
        #expect(early.pending == 1)
        #expect(f.exists(path))

        f.clock.advance(0.5)
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("the drain at open also waits for files.unlink_delay")
    func drainAtOpenWaitsForDelay() throws {
        let f = try Fixture { $0.unlinkDelay = 30 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try f.reopen(drain: true)
        #expect(f.exists(path))
        #expect(try f.store.pending().map(\.path) == [path])
        f.clock.advance(30)
        try f.reopen(drain: true)
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
    }

    @Test(
        "a queued file referenced again before the sweep is kept: the new reference drops its row",
        arguments: Entry.allCases)
    func referencedAgain(entry: Entry) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        try entry.register(path, from: ref("c", "again"), in: f)
        #expect(try f.store.pending().isEmpty)

        let sweep = try f.store.sweep()
        #expect(sweep.referencedAgain.isEmpty)
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.pending == 0)
        #expect(f.exists(path))
        #expect(try f.store.pending().isEmpty)
        #expect(try f.fileReport(path)?.edges.map(\.source) == [ref("c", "again")])

        // The new holder owns it as before.
        #expect(try f.delete(ref("c", "again")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a file taken again by a later transaction is kept even if that holder is later removed with reason edge")
    func takenAgainDropsQueueRow() throws {
        let f = try Fixture { $0.unlinkDelay = 60 }
        let path = try f.makeFile("again")
        let a = ref("m", "a"), b = ref("m", "b")
        try f.put([(a, ["file": .string(path)]), (b, [:])])
        #expect(try f.delete(a).filesQueued == [path])
        // A later transaction takes the file again: its queue row is dropped and the file kept...
        try f.store.write {
            try $0.addEdge(
                name: "keep", source: b, destination: .file(path), rules: .deleteDestinationIfAllSourcesDeleted)
        }
        // ...and a still later one removes that edge with reason edge, which fires nothing.
        let r = try f.store.write { try $0.removeEdge(name: "keep", source: b, destination: .file(path)) }.report
        #expect(r.filesQueued.isEmpty)
        f.clock.advance(61)
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }

    @Test("a key deleted and put again with its file in one transaction keeps the file")
    func deleteAndPutAgainInOneTransaction() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let report = try f.store.write { tx in
            try tx.delete(ref("c", "k"))
            try tx.put(ref("c", "k"), value: ["file": .string(path)])
        }.report
        #expect(report.filesQueued.isEmpty)
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
    }

    @Test("setting the file field to null releases the file")
    func nullFieldReleasesFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let report = try f.put([(ref("c", "k"), ["file": nil])])
        #expect(report.filesQueued == [path])
        #expect(try f.exists(ref("c", "k")))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a file dropped from an array field is released and the files still named are kept")
    func arrayFieldShrinks() throws {
        let f = try Fixture()
        let dropped = try f.makeFile("a/one.bin")
        let kept = try f.makeFile("a/two.bin")
        try f.put([(ref("c", "k"), ["file": [.string(dropped), .string(kept)]])])
        #expect(try f.store.read { try $0.get(ref("c", "k")) }?.files.map(\.path) == [dropped, kept])

        let report = try f.put([(ref("c", "k"), ["file": [.string(kept)]])])
        #expect(report.filesQueued == [dropped])
        #expect(try f.store.sweep().unlinked == [dropped])
        #expect(!f.exists(dropped))
        #expect(f.exists(kept))
        #expect(try f.fileReport(kept)?.edges.map(\.source) == [ref("c", "k")])
    }

    @Test("a file queued before a crash is unlinked by the drain when the store opens again")
    func drainAtOpen() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        #expect(f.exists(path))
        try f.reopen(drain: true)
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.counters()["unlinked"] == 1)
    }

    @Test("a store opened without draining leaves the queued file pending until a sweep")
    func noDrainAtOpen() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try f.reopen(drain: false)
        #expect(f.exists(path))
        #expect(try f.store.pending().map(\.path) == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test(
        "a queued file is unlinked only once its commit is durable", arguments: StoreConfiguration.Durability.allCases)
    func durability(durability: StoreConfiguration.Durability) throws {
        let f = try Fixture { $0.durability = durability }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let del = try f.delete(ref("c", "k"))
        switch durability {
        case .full: #expect(f.store.durableCommit == del.commit)
        case .normal: #expect(f.store.durableCommit < del.commit)
        }
        #expect(f.exists(path))
        #expect(try f.store.pending().map(\.path) == [path])

        let sweep = try f.store.sweep()
        #expect(f.store.durableCommit >= del.commit)
        #expect(sweep.unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a file shared by two objects survives the first delete and goes with the second")
    func sharedFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared.bin")
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")

        #expect(try f.delete(ref("c", "a")).filesQueued.isEmpty)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
        #expect(try f.fileReport(path)?.retainedBy == 1)

        #expect(try f.delete(ref("c", "b")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("two objects sharing a file deleted in one transaction queue it once")
    func sharedFileDeletedTogether() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared.bin")
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")
        #expect(try f.delete(ref("c", "a"), ref("c", "b")).filesQueued == [path])
        #expect(try f.store.pending().count == 1)
        #expect(try f.store.sweep().unlinked == [path])
    }

    @Test(
        "one of two retaining edges from the same source going does not unlink the file",
        arguments: ["file", "extra"])
    func twoEdgesFromOneSource(removed: String) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.store.write { tx in
            try tx.addEdge(
                name: "extra", source: ref("c", "k"), destination: .file(path),
                rules: .deleteDestinationIfAllSourcesDeleted)
        }
        #expect(try f.fileReport(path)?.retainedBy == 2)

        let report = try f.store.write { tx in
            try tx.removeEdge(name: removed, source: ref("c", "k"), destination: .file(path), reason: .sourceDeleted)
        }
        #expect(report.value)
        #expect(report.report.filesQueued.isEmpty)
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
        #expect(try f.fileReport(path)?.retainedBy == 1)

        // The remaining edge still owns the file.
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("deleting a source with two retaining edges to one file queues it once")
    func twoEdgesFromOneSourceDeletedTogether() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.store.write { tx in
            try tx.addEdge(
                name: "extra", source: ref("c", "k"), destination: .file(path),
                rules: .deleteDestinationIfAllSourcesDeleted)
        }
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.pending().count == 1)
    }

    @Test("removing the last retaining edge with reason sourceDeleted unlinks the file")
    func lastEdgeRemovedAsSourceDeleted() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let report = try f.store.write { tx in
            try tx.removeEdge(name: "file", source: ref("c", "k"), destination: .file(path), reason: .sourceDeleted)
        }.report
        #expect(report.filesQueued == [path])
        #expect(try f.exists(ref("c", "k")))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test("a weak edge does not keep a file alive, and goes with it")
    func weakEdgeDoesNotRetain() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "owner")
        try f.store.write { tx in
            try tx.put(ref("c", "watcher"), value: [:])
            try tx.addEdge(name: "watch", source: ref("c", "watcher"), destination: .file(path), rules: [])
        }
        #expect(try f.fileReport(path)?.retainedBy == 1)

        let del = try f.delete(ref("c", "owner"))
        #expect(del.filesQueued == [path])
        #expect(del.edgesRemoved.contains { $0.edge.name == "watch" && $0.reason == .destinationDeleted })
        #expect(try f.exists(ref("c", "watcher")))
        #expect(try f.count(EdgeFilter(source: ref("c", "watcher"))) == 0)
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }
}

@Suite struct UnlinkRecheckTests {
    @Test("the unlinker re-checks references: a queue row whose path an edge holds is dropped and the file kept")
    func sweepRechecksReferences() throws {
        let f = try Fixture()
        let path = try f.makeFile("held/by/edge")
        try f.put([(ref("c", "holder"), ["file": .string(path)])])
        // Transactions cancel a queued unlink when they take a path again; a row written past
        // them (by hand here) must still meet the sweep's own check.
        var config = GRDB.Configuration()
        config.busyMode = .timeout(5)
        let q = try GRDB.DatabaseQueue(path: f.dbPath, configuration: config)
        try q.write { db in
            try db.execute(
                sql: """
                    INSERT INTO unlink_queue (path, device, inode, commit_no, queued_at, next_attempt) VALUES (?, 0, 0, 0, 0, 0)
                    """, arguments: [path])
        }
        try q.close()
        let sweep = try f.store.sweep()
        #expect(sweep.referencedAgain == [path])
        #expect(sweep.unlinked.isEmpty)
        #expect(f.exists(path))
        #expect(try f.store.pending().isEmpty)
    }
}
