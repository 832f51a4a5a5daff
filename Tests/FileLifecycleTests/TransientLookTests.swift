// A queued file whose look (FileClaim.identify) ends on a transient error (EMFILE, EIO) is not
// taken as gone or as not the caller's: its row owes the look, the sweep takes it again, and
// fails and backs off while it still cannot. The EMFILE is the walk's open failed through its
// test hook (`FileProbe.openFailures`): a real one needs a full descriptor table, which would
// fail every other test running in this process at the same time.

import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct TransientLookTests {
    /// Runs `body` with the walk's open of `path` (below `root`) failing with `e`.
    func failingOpen<T>(_ root: String, _ path: String, _ e: Int32, _ body: () throws -> T) rethrows -> T {
        FileProbe.openFailures.withLock { $0[root] = { $0 == path ? e : nil } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.openFailures.withLock { $0[root] = nil } }
        return try body()
    }

    /// Puts `c/k` holding `path` in a transaction judged for the caller (enforce_ownership).
    func holdChecked(_ f: Fixture, _ path: String) throws {
        try f.store.write { tx in
            tx.fileReferenceCheck = FileReferenceCheck(uid: getuid(), owner: "u\(getuid())") { _ in nil }
            try tx.put(ref("c", "k"), value: ["file": .string(path)])
        }
    }

    @Test("a file registered before it existed, its look at the delete failing with EMFILE, is unlinked later")
    func unclaimedLookRetried() throws {
        let f = try Fixture()
        let path = f.root + "/a/later.bin"
        try f.hold(path, key: "k")
        _ = try f.makeFile("a/later.bin")
        let queued = try failingOpen(f.root, path, EMFILE) { try f.delete(ref("c", "k")).filesQueued }
        #expect(queued == [path])
        let row = try #require(try f.store.pending().first)
        #expect(row.lastError?.contains("EMFILE") == true, "\(String(describing: row.lastError))")
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path], "skipped: \(sweep.skipped)")
        #expect(!f.exists(path))
    }

    @Test("a claimed file whose look fails with EMFILE at the delete and at the sweep fails, then goes")
    func claimedLookRetried() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        try failingOpen(f.root, path, EMFILE) {
            #expect(try f.delete(ref("c", "k")).filesQueued == [path])
            let sweep = try f.store.sweep()
            #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep.skipped)")
            let failed = try #require(sweep.failed.first)
            #expect(failed.path == path && failed.attempts == 1)
            #expect(failed.error.contains("EMFILE"), "\(failed.error)")
            #expect(sweep.pending == 1)
        }
        #expect(f.exists(path))
        let sweep = try f.store.sweep(retryFailed: true)
        #expect(sweep.unlinked == [path], "skipped: \(sweep.skipped), failed: \(sweep.failed)")
        #expect(!f.exists(path))
    }

    @Test("a claimed file whose look fails for good (EACCES) is still not taken")
    func claimedLookRefused() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/mine.bin")
        try holdChecked(f, path)
        let queued = try failingOpen(f.root, path, EACCES) { try f.delete(ref("c", "k")).filesQueued }
        #expect(queued == [path])
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(sweep.skipped.map(\.path) == [path])
        #expect(f.exists(path))
    }
}
