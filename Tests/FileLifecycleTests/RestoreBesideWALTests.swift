// A backup copied over the live database with the live one's -wal left beside it: SQLite reads
// any WAL at the path, so opening the copy would write the live store's frames into it (its
// copy mark among them). The open refuses instead and leaves the copy as it is.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite struct RestoreBesideWALTests {
    @Test("a copy put in place beside the live database's WAL is not opened, and is not changed")
    func foreignWALRefused() throws {
        let f = try Fixture()
        for i in 0..<20 { try f.put([(ref("c", "k\(i)"), ["n": .int(Int64(i))])]) }
        let copy = f.dir + "/copy.sqlite"
        _ = try f.store.backup(to: copy)
        for i in 0..<20 { try f.put([(ref("c", "after\(i)"), [:])]) }
        let wal = try Data(contentsOf: URL(fileURLWithPath: f.dbPath + "-wal"))
        #expect(!wal.isEmpty)
        f.store.close()
        for suffix in ["", "-wal", "-shm"] { unlink(f.dbPath + suffix) }
        #expect(copyfile(copy, f.dbPath))
        try wal.write(to: URL(fileURLWithPath: f.dbPath + "-wal"))  // the live run's, left behind
        let before = try Data(contentsOf: URL(fileURLWithPath: f.dbPath))
        var c = f.configuration
        c.opensCopies = true
        let e = expectCode(.conflict) { _ = try Store(path: f.dbPath, configuration: c) }
        #expect(e?.message.contains("-wal") == true, "\(String(describing: e))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.dbPath)) == before)
        unlink(f.dbPath + "-wal")
        f.store = try Store(path: f.dbPath, configuration: c)  // as the message says: it opens
        #expect(f.store.copyMark != nil)
        #expect(try f.store.read { try $0.get(ref("c", "after0")) } == nil)
    }
}

private func copyfile(_ from: String, _ to: String) -> Bool {
    (try? FileManager.default.copyItem(atPath: from, toPath: to)) != nil
}
