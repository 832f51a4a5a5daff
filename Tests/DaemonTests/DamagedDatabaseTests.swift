// A database only an admin can mend (assetd(8), EXIT STATUS): assetd exits 78 and says what to
// do, so that systemd does not restart it every few seconds for ever.

import Foundation
import Testing

@Suite struct DamagedDatabaseTests {
    @Test("a damaged database: exit 78, naming it damaged and the restore")
    func damagedDatabase() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 0..<50 { try c.putObject("c", "k\(i)", ["n": .int(Int64(i))]) }
        #expect(h.stop() == 0)
        #expect(truncate(h.database, 4096) == 0)  // the first page only: every table's pages gone
        let r = try runAssetd(["--config", h.configPath])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("is damaged") && r.stderr.contains("restore"), "\(r.stderr)")
    }

    @Test("a file that is no database: exit 78")
    func notADatabase() throws {
        let h = try DaemonHarness()
        #expect(h.stop() == 0)
        for suffix in ["-wal", "-shm"] { unlink(h.database + suffix) }
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: h.database))
        let r = try runAssetd(["--config", h.configPath])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("is not a database"), "\(r.stderr)")
    }
}
