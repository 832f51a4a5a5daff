// Careless [policy] values (assetd.toml(5), [policy]), and a min_free the disk's other files
// put out of reach: the policy timer evicts nothing for it and logs it once.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct PolicyMistakeTests {
    @Test("the policy timer evicts nothing for a min_free the disk's other files put out of reach, and logs it")
    func timerSkipsUnreachableMinFree() throws {
        let h = try DaemonHarness(start: false)
        // Just under the file system's size: out of reach on a disk holding anything besides
        // this test's files.
        var vfs = statvfs()
        #expect(statvfs(h.root, &vfs) == 0)
        let size = Int64(vfs.f_blocks - (vfs.f_bfree - vfs.f_bavail)) * Int64(vfs.f_frsize)
        let policy = { (interval: String) in
            "[policy]\ninterval = \"\(interval)\"\nmin_age = \"0s\"\nmin_free = \(size - 1)\n"
        }
        h.extraConfig = policy("1h")
        try h.writeConfig()
        try h.start()
        let c = try h.client()
        var files = [String]()
        for i in 0..<3 {
            files.append(try h.makeFile("u\(i).bin", size: 100))
            try c.putFile("media", "u\(i)", files[i])
        }
        h.extraConfig = policy("1s")  // the timer's first run comes a second after the reload
        try h.reload()
        #expect(
            eventually { h.log.contains("cannot be met on the file system of \(h.root)") }, "\(h.log.suffix(2000))")
        #expect(try (0..<3).allSatisfy { try c.getObject("media", "u\($0)") != .null })
        #expect(files.allSatisfy(h.exists))
    }
}
