// The put's probe opens a file beneath its root in one openat2 and walks the path folder by
// folder only when that fails: both ways must record the same file the same way, and every
// refusal must still come from the walk.

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
        let fast = try FileProbe.probe(path: path, root: f.root)
        let walked = try FileProbe.walk(path: path, root: f.root, roots: [f.root])
        #expect(fast == walked)
        #expect(fast.exists && fast.size == 123 && fast.stamp.ctime != nil)
    }

    @Test(
        "a missing file, a missing folder or a folder that is a file reads as missing both ways",
        arguments: ["gone.bin", "no/such/folder.bin", "plain.bin/below.bin"])
    func missingBothWays(relative: String) throws {
        let f = try Fixture()
        _ = try f.makeFile("plain.bin")
        let path = f.root + "/" + relative
        #expect(try FileProbe.probe(path: path, root: f.root) == .missing)
        #expect(try FileProbe.walk(path: path, root: f.root, roots: [f.root]) == .missing)
    }

    @Test("a missing root reads as missing")
    func missingRoot() throws {
        let f = try Fixture()
        let root = f.dir + "/no-root"
        #expect(try FileProbe.probe(path: root + "/x.bin", root: root) == .missing)
    }
}
