// The orphan walk of a nested root reached from the outer root needs no more access than
// opening the nested root did: a folder on the way that the daemon may only search (mode
// 711, another owner) is passed through, not read. The daemon's user is played by this
// thread's filesystem uid (setfsuid is per thread), so the test runs as root.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// setfsuid(2), which the Glibc module does not export: this thread's filesystem uid.
private let setfsuid: @convention(c) (UInt32) -> Int32 = unsafeBitCast(
    dlsym(nil, "setfsuid"), to: (@convention(c) (UInt32) -> Int32).self)

@Suite(.enabled(if: geteuid() == 0, "needs root to take another filesystem uid"))
struct NestedRootAccessTests {
    @Test("a nested root below a folder the daemon may only search is still walked for orphans")
    func walkThroughSearchOnlyFolder() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "/locked/inner") }
        let lost = try f.makeFile("locked/inner/lost.bin")
        chmod(f.dir, 0o755)
        chmod(f.root + "/locked", 0o711)
        let run = VerifyRun(store: f.store, options: VerifyOptions(), progress: nil)
        var found = [String?]()
        // As nobody: "locked" (root's, 711) can be searched, not listed.
        _ = setfsuid(65534)
        defer { _ = setfsuid(0) }
        try run.walk(root: f.root + "/locked/inner") { found.append($0.path) }
        #expect(found == [lost])
    }
}
