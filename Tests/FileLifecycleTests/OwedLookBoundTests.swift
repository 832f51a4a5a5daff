// The sweep takes owed looks (OwedLookTests) before a batch's write transaction, and only so
// many a batch (OwedLooks.swift): a failing disk or a full descriptor table must not hold the
// writer for every owed row, nor the sweep for all of them at once. Looks are counted by the
// walk's test hook, which a look calls with its root first (`FileProbe.stepHooks`).

import Foundation
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct OwedLookBoundTests {
    let t = TransientLookTests()

    /// Files at `relative(i)` for each i below `n`, registered before they existed, deleted
    /// with their looks failing at the folder `failing` (EMFILE), owed looks dated later;
    /// `plain` files, registered as they are, deleted with them, owe none.
    func owedFiles(
        _ f: Fixture, _ n: Int, failing: String, plain: [String] = [], _ relative: (Int) -> String
    ) throws -> [String] {
        var paths = [String]()
        for i in 0..<n {
            let path = f.root + "/" + relative(i)
            try f.hold(path, key: "k\(i)")
            try f.makeFile(relative(i))
            paths.append(path)
        }
        for (i, p) in plain.enumerated() { try f.hold(try f.makeFile(p), key: "p\(i)") }
        try t.failing(f.root, f.root + "/" + failing, EMFILE) {
            _ = try f.store.write { tx in
                for i in 0..<n { try tx.delete(ref("c", "k\(i)")) }
                for i in plain.indices { try tx.delete(ref("c", "p\(i)")) }
            }
        }
        try f.oweLater()
        return paths
    }

    /// Counts the looks taken at `root` from now on, until the returned hook's removal.
    func countLooks(_ root: String) -> (count: () -> Int, remove: () -> Void) {
        let looks = Mutex(0)
        FileProbe.stepHooks.withLock { $0[root] = { p in if p == root { looks.withLock { $0 += 1 } } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        return ({ looks.withLock { $0 } }, { FileProbe.stepHooks.withLock { $0[root] = nil } })
    }

    @Test(
        "a batch takes only so many owed looks: the rest, and their folders' files, stay queued, not failed",
        .enabled(if: TransientLookTests.localTimes))
    func looksPerBatch() throws {
        let f = try Fixture()
        let n = Store.owedLooksPerBatch + 3
        let paths = try owedFiles(f, n, failing: "a", plain: ["a/plain.bin", "b/plain.bin"]) { "a/f\($0).bin" }
        let looks = countLooks(f.root)
        defer { looks.remove() }
        let first = try f.store.sweep()
        #expect(looks.count() == Store.owedLooksPerBatch)
        // Nothing unlinked in a: a late look refuses a folder changed since it was owed.
        #expect(first.unlinked == [f.root + "/b/plain.bin"], "failed: \(first.failed)")
        #expect(first.failed.isEmpty && first.skipped.isEmpty && first.pending == n + 1)
        let second = try f.store.sweep()
        #expect(looks.count() == n)
        #expect(Set(second.unlinked) == Set(paths + [f.root + "/a/plain.bin"]), "skipped: \(second.skipped)")
        #expect(second.pending == 0)
    }

    @Test(
        "a look left holds back the files of every folder on its way below the root, not only its own",
        .enabled(if: TransientLookTests.localTimes))
    func foldersOnTheWayHeld() throws {
        let f = try Fixture()
        let n = Store.owedLooksPerBatch + 1
        let paths = try owedFiles(f, n, failing: "a/b", plain: ["a/p.bin", "c/p.bin"]) { "a/b/f\($0).bin" }
        let first = try f.store.sweep()
        // a/p.bin's unlink would change a, which the look left at a/b/ walks and refuses.
        #expect(first.unlinked == [f.root + "/c/p.bin"], "failed: \(first.failed)")
        #expect(first.skipped.isEmpty && first.pending == n + 1)
        let second = try f.store.sweep()
        #expect(Set(second.unlinked) == Set(paths + [f.root + "/a/p.bin"]), "skipped: \(second.skipped)")
        #expect(second.pending == 0)
    }

    @Test(
        "a batch's owed looks walk only so many names: the rest stay owed",
        .enabled(if: TransientLookTests.localTimes))
    func namesPerBatch() throws {
        let f = try Fixture()
        // 400 names below the root each, a look's cost 401: two fit the budget, three do not.
        let deep = "a/" + String(repeating: "d/", count: 398)
        #expect(2 * 401 <= Store.owedLookNames && 3 * 401 > Store.owedLookNames)
        let paths = try owedFiles(f, 3, failing: "a") { deep + "f\($0).bin" }
        let looks = countLooks(f.root)
        defer { looks.remove() }
        let first = try f.store.sweep()
        #expect(looks.count() == 2)
        #expect(first.unlinked.isEmpty && first.failed.isEmpty && first.pending == 3, "\(first.skipped)")
        #expect(Set(try f.store.sweep().unlinked) == Set(paths))
        #expect(looks.count() == 3)
    }

    @Test("after an owed look fails on a transient error again, the batch takes no more")
    func noLookAfterTransient() throws {
        let f = try Fixture()
        let paths = try owedFiles(f, 3, failing: "a") { "a/f\($0).bin" }
        let looks = countLooks(f.root)
        defer { looks.remove() }
        let sweep = try t.failing(f.root, f.root + "/a", EIO) { try f.store.sweep() }
        #expect(looks.count() == 1)
        #expect(sweep.failed.map(\.path) == [paths[0]] && sweep.unlinked.isEmpty)
        #expect(sweep.failed.first?.error.contains("EIO") == true, "\(sweep.failed)")
        // The others were not tried: not failed, no attempt counted.
        let rows = try f.store.pending()
        #expect(rows.map(\.path) == paths)
        #expect(rows.map(\.attempts) == [1, 0, 0])
    }

    @Test(
        "an owed look is taken with the writer free: a put from another thread completes meanwhile",
        .enabled(if: TransientLookTests.localTimes))
    func writerFreeDuringLook() throws {
        let f = try Fixture()
        let paths = try owedFiles(f, 1, failing: "a") { "a/f\($0).bin" }
        let (root, store) = (f.root, f.store!)
        let once = OwedLookTests.Once()
        let put = Mutex<DispatchTimeoutResult?>(nil)
        // In the look: a put on another thread, waited for. Were the writer held, it would
        // wait for the sweep's transaction, which waits for this look: 60 s, then a failure.
        FileProbe.stepHooks.withLock {
            $0[root] = { p in
                guard p == root, once.first() else { return }
                let done = DispatchSemaphore(value: 0)
                Thread {
                    _ = try? store.write { tx in try tx.put(ref("c", "other"), value: ["n": 1]) }
                    done.signal()
                }.start()
                let waited = done.wait(timeout: .now() + 60)
                put.withLock { $0 = waited }
            }
        }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let sweep = try f.store.sweep()
        #expect(!once.first(), "the look ran")
        #expect(put.withLock { $0 } == .success)
        #expect(try f.exists(ref("c", "other")))
        #expect(sweep.unlinked == paths, "skipped: \(sweep.skipped), failed: \(sweep.failed)")
    }
}
