// WriteTransaction.attempt: a part that fails leaves no trace while the rest commits.

import GRDB
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct AttemptTests {
    @Test("a failed attempt undoes its SQL and recorded intent; the others commit together")
    func failedPartAlone() throws {
        let f = try Fixture()
        let good = try f.makeFile("good", size: 5)
        try f.put([(ref("c", "old"), 1)])
        let r = try f.store.write { tx -> [Bool] in
            var ok = [Bool]()
            for (key, deleteOld, value) in [
                ("a", false, JSONValue.object(["file": .string(good)])),
                ("bad", true, ["file": "/etc/passwd"]), ("b", false, 2),
            ] {
                do {
                    try tx.attempt {
                        if deleteOld { try tx.delete(ref("c", "old")) }  // intent to be undone with the part
                        try tx.put(ref("c", key), value: value)
                    }
                    ok.append(true)
                } catch {
                    ok.append(false)
                }
            }
            let oldVisible = try tx.exists(ref("c", "old"))
            #expect(oldVisible)
            return ok
        }
        #expect(r.value == [true, false, true])
        #expect(try f.exists(ref("c", "a")) && f.exists(ref("c", "b")) && f.exists(ref("c", "old")))
        #expect(try !f.exists(ref("c", "bad")))
        #expect(r.report.put == [ref("c", "a"), ref("c", "b")])
        #expect(r.report.deleted.isEmpty)
        #expect(try f.store.read { try $0.file(good) }?.edges.count == 1)
    }

    @Test("an attempt that fails after registering a file leaves no registry row or index row")
    func failedAttemptLeavesNoRows() throws {
        let f = try Fixture()
        let file = try f.makeFile("x", size: 9)
        try f.store.write { tx in
            try? tx.attempt {
                try tx.put(ref("c", "k"), value: ["file": .string(file)])
                try tx.flush()
                throw StoreError(.conflict, "changed my mind")
            }
            try tx.put(ref("c", "other"), value: 1)
        }
        #expect(try f.store.read { try $0.file(file) } == nil)
        #expect(try f.store.query(clause: "", include: .keys).map(\.ref) == [ref("c", "other")])
    }
}
