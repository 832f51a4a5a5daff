// The put's probe finds a file beneath its root in one openat2 and walks the path folder by
// folder only when that fails: both ways must record the same file the same way, every
// refusal must still come from the walk, and nothing but a regular file is opened to read.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct ProbeBeneathTests {
    @Test("a regular file deep below the root is recorded by the openat2 probe as the walk records it")
    func sameStateBothWays() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/b/c/d.bin", size: 123)
        let fast = try FileProbe.probe(path: path, root: f.root, roots: try ManagedRoots([f.root]))
        let walked = try FileProbe.walk(path: path, root: f.root, roots: try ManagedRoots([f.root]))
        #expect(fast == walked)
        // The fast path itself found it: equal states alone would pass with a probe that always walks.
        guard case .file(let beneath) = OpenBeneath.probe(path, rootLength: f.root.utf8.count, pin: nil) else {
            Issue.record("the openat2 probe did not find the file")
            return
        }
        #expect(beneath == walked)
        #expect(fast.exists && fast.size == 123 && fast.stamp.ctime != nil)
    }

    @Test(
        "a missing file, a missing folder or a folder that is a file reads as missing both ways",
        arguments: ["gone.bin", "no/such/folder.bin", "plain.bin/below.bin"])
    func missingBothWays(relative: String) throws {
        let f = try Fixture()
        _ = try f.makeFile("plain.bin")
        let path = f.root + "/" + relative
        #expect(try FileProbe.probe(path: path, root: f.root, roots: try ManagedRoots([f.root])) == .missing)
        #expect(try FileProbe.walk(path: path, root: f.root, roots: try ManagedRoots([f.root])) == .missing)
    }

    @Test("a fifo at the path is refused without being opened: a writer waiting for a reader is not released")
    func fifoNeverOpened() throws {
        let f = try Fixture()
        let path = f.root + "/d/pipe"
        try makeFifo(at: path)
        let watcher = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(watcher >= 0)
        defer { close(watcher) }
        try #require(inotify_add_watch(watcher, path, UInt32(IN_OPEN)) >= 0)
        let error = expectCode(.notARegularFile) { try f.hold(path, key: "k") }
        #expect(error != nil)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(watcher, &buffer, buffer.count)
        #expect(n < 0 && errno == EAGAIN, "the fifo was opened (\(n) bytes of inotify events)")
    }

    @Test("a missing root reads as missing")
    func missingRoot() throws {
        let f = try Fixture()
        let root = f.dir + "/no-root"
        #expect(try FileProbe.probe(path: root + "/x.bin", root: root, roots: try ManagedRoots([root])) == .missing)
    }
}
