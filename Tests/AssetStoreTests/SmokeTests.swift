import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct SmokeTests {
    @Test("an object holding a file is stored, and deleting it unlinks the file after commit")
    func putDeleteUnlink() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 100)
        let put = try f.put([(ref("media", "one"), ["file": .string(path), "owner": "alice"])])
        #expect(put.commit == 1)
        let obj = try #require(try f.store.read { try $0.get(ref("media", "one")) })
        #expect(obj.owner == "alice")
        #expect(obj.files.map(\.size) == [100])
        let rows = try f.store.query(clause: "WHERE owner = ?", parameters: ["alice"], include: .rows)
        #expect(rows.count == 1)
        #expect(rows.first?.columns?["size"] == .int(100))
        let del = try f.delete(ref("media", "one"))
        #expect(del.filesQueued == [path])
        #expect(f.exists(path))
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path])
        #expect(!f.exists(path))
    }
}
