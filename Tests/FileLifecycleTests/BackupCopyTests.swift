// A backup copy opened with the live roots must not act on them: its unlink queue may list
// files the live database holds again. The copy is marked; a marked store never sweeps, runs a
// real policy run or deletes orphans, and opens only for a caller expecting a copy, until the
// mark is cleared (the restore).

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite("backup copies")
struct BackupCopyTests {
    /// A file queued in the copy (its holder deleted with a long unlink delay) and held again
    /// in the live store; returns the file and the copy's path.
    func copyQueuingHeldFile(_ f: Fixture) throws -> (file: String, copy: String) {
        let file = try f.makeFile("a/f.bin")
        try f.hold(file, key: "o")
        #expect(try f.delete(ref("c", "o")).filesQueued == [file])
        let copy = f.dir + "/copy.sqlite"
        _ = try f.store.backup(to: copy)
        try f.hold(file, key: "o")  // held again: the live row is cancelled
        #expect(try f.store.pending().isEmpty)
        return (file, copy)
    }

    func copyConfiguration(_ f: Fixture) -> StoreConfiguration {
        var c = StoreConfiguration(roots: [f.root])  // unlink_delay 0: the copy's row is due at once
        c.clock = f.configuration.clock
        c.opensCopies = true
        return c
    }

    @Test("a backup inside a managed root, named directly or through a symbolic link, is refused")
    func backupInsideRootRefused() throws {
        let f = try Fixture()
        try FileManager.default.createDirectory(atPath: f.root + "/b", withIntermediateDirectories: true)
        #expect(symlink(f.root + "/b", f.dir + "/link") == 0)
        // A folder whose name starts with a combining mark: "/" and the mark are one Character.
        let marked = f.root + "/\u{301}d"
        try FileManager.default.createDirectory(atPath: marked, withIntermediateDirectories: true)
        for target in [
            f.root + "/copy.sqlite", f.root + "/b/copy.sqlite", f.dir + "/link/copy.sqlite", marked + "/copy.sqlite",
        ] {
            #expect(throws: StoreError.self, "\(target)") { _ = try f.store.backup(to: target) }
            #expect(!FileManager.default.fileExists(atPath: target))
        }
        _ = try f.store.backup(to: f.dir + "/copy.sqlite")  // beside the root: fine
    }

    @Test("a backup copy opened with the live roots keeps a file the live store holds again")
    func copyDoesNotSweep() throws {
        let f = try Fixture { $0.unlinkDelay = 3600 }
        let (file, copyPath) = try copyQueuingHeldFile(f)
        f.clock.advance(7200)
        let copy = try Store(path: copyPath, configuration: copyConfiguration(f))  // drainOnOpen on
        defer { copy.close() }
        #expect(copy.copyMark?.contains(f.dbPath) == true)
        #expect(f.exists(file))
        #expect(try copy.pending().map(\.path) == [file])
        #expect(expectCode(.conflict) { try copy.sweep(retryFailed: true) } != nil)
        #expect(f.exists(file))
        #expect(try copy.pending().map(\.path) == [file])
    }

    @Test("a backup copy runs no real policy run and deletes no orphan; dry runs and checks work")
    func copyRunsNoPolicy() throws {
        let f = try Fixture()
        let (file, copyPath) = try copyQueuingHeldFile(f)
        let orphan = try f.makeFile("b/orphan.bin")
        f.clock.advance(7200)
        var c = copyConfiguration(f)
        c.writesCopies = true  // a dry run writes (and rolls back); `assetctl --db` opens a copy read-only
        var p = PolicyConfiguration()
        p.maxBytes = 0
        c.policy = p
        let copy = try Store(path: copyPath, configuration: c)
        defer { copy.close() }
        _ = try copy.enforce(dryRun: true)
        #expect(expectCode(.conflict) { try copy.enforce() } != nil)
        #expect(expectCode(.conflict) { try copy.expire(collection: nil, olderThan: 0, idle: nil) } != nil)
        var o = VerifyOptions()
        o.deleteOrphans = true
        o.force = true
        #expect(expectCode(.conflict) { try copy.verify(o) } != nil)
        #expect(f.exists(file) && f.exists(orphan))
        #expect(try f.exists(ref("c", "o")))
    }

    @Test("assetd's open refuses a backup copy, naming the restore; restored, its queue waits for an admin's sweep")
    func restore() throws {
        let f = try Fixture { $0.unlinkDelay = 3600 }
        let (file, copyPath) = try copyQueuingHeldFile(f)
        f.clock.advance(7200)
        var daemon = copyConfiguration(f)
        daemon.opensCopies = false
        let refused = expectCode(.conflict) { try Store(path: copyPath, configuration: daemon) }
        #expect(
            refused?.message.contains("assetctl --db \(copyPath) --config CONFIG restore") == true,
            "\(String(describing: refused))")
        #expect(f.exists(file))

        var opener = copyConfiguration(f)
        opener.writesCopies = true
        let copy = try Store(path: copyPath, configuration: opener)
        #expect(try copy.restore(configuredSource: f.dbPath, force: false).held == 1)
        #expect(copy.copyMark == nil)
        #expect(
            expectCode(.conflict) { try copy.restore(configuredSource: f.dbPath, force: false) } != nil,
            "a live database: nothing to restore")
        copy.close()
        f.store.close()  // the live store is the one replaced by the restore
        let restored = try Store(path: copyPath, configuration: daemon)
        defer { restored.close() }
        #expect(restored.copyMark == nil)
        #expect(f.exists(file), "the open drained the restored copy's queue: a later put may hold its file")
        #expect(try restored.sweep().unlinked.isEmpty)
        #expect(try restored.sweep(releasingRestoreHold: true).unlinked == [file], "an admin's sweep runs it")
        #expect(try restored.pending().isEmpty)
    }
}
