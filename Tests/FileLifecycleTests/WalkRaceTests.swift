// The probe's walk (taken where openat2 fails: a symlink or a mount on the way, or no
// openat2) against a folder swapped for a symlink between its steps: it walks descriptors,
// so the swap is never followed, and nothing but the regular file it looked at is opened.
// The swap happens through the walk's test hook, right after a step.

import Foundation
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite(.serialized) struct WalkRaceTests {
    /// Runs `body` with `hook` run after each step of walks below `root`.
    func withStepHook(_ root: String, _ hook: @escaping @Sendable (String) -> Void, _ body: () throws -> Void) rethrows
    {
        FileProbe.stepHooks.withLock { $0[root] = hook }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        try body()
    }

    @Test("a folder swapped for a symlink to a FIFO's folder once the walk saw the file: the FIFO is never opened")
    func fifoSwappedInIsNeverOpened() throws {
        let f = try Fixture()
        let path = try f.makeFile("x/leaf")
        let outside = f.dir + "/outside"
        try makeFifo(at: outside + "/leaf")
        let watcher = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(watcher >= 0)
        defer { close(watcher) }
        try #require(inotify_add_watch(watcher, outside + "/leaf", UInt32(IN_OPEN)) >= 0)
        var before = stat()
        try #require(stat(path, &before) == 0)
        let (root, dir) = (f.root, f.dir)
        let swapped = Atomic<Bool>(false)
        var state: FileState?
        withStepHook(
            root,
            { step in
                guard step == path else { return }
                let done = rename(root + "/x", dir + "/x.moved") == 0 && symlink(outside, root + "/x") == 0
                swapped.store(done, ordering: .relaxed)
            }
        ) {
            state = try? FileProbe.walk(path: path, root: root, roots: try ManagedRoots([root]))
        }
        let didSwap = swapped.load(ordering: .relaxed)
        #expect(didSwap, "the hook never swapped the folder: the test proves nothing")
        #expect(
            state?.inode == Int64(before.st_ino),
            "the walk did not return the file it looked at: \(String(describing: state))")
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(watcher, &buffer, buffer.count)
        #expect(n < 0 && errno == EAGAIN, "the FIFO was opened (\(n) bytes of inotify events)")
    }

    @Test("a folder swapped for a symlink once the walk passed it: the file outside the root is not recorded")
    func fileOutsideIsNotRecorded() throws {
        let f = try Fixture()
        let path = try f.makeFile("x/leaf", size: 10)
        let outside = f.dir + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: outside + "/leaf", contents: Data(count: 999)))
        let (root, dir) = (f.root, f.dir)
        let swapped = Atomic<Bool>(false)
        var state: FileState?
        withStepHook(
            root,
            { step in
                guard step == root + "/x" else { return }
                let done = rename(root + "/x", dir + "/x.moved") == 0 && symlink(outside, root + "/x") == 0
                swapped.store(done, ordering: .relaxed)
            }
        ) {
            state = try? FileProbe.walk(path: path, root: root, roots: try ManagedRoots([root]))
        }
        let didSwap = swapped.load(ordering: .relaxed)
        #expect(didSwap, "the hook never swapped the folder: the test proves nothing")
        #expect(state?.size == 10, "the walk recorded \(String(describing: state)), not the 10-byte file it walked to")
    }
}
