// Manual edges added before their ends exist (PendingEdges): written at the flush in the order
// they were added, a re-add replacing the rules and moving the edge last, a remove cancelling
// it, and triples told apart by their bytes, as the edge table's unique key tells them.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct PendingEdgeTests {
    /// The edges named `name`, in id order (the order they were written), as the bytes of
    /// "source key:rules" (Swift's `==` on strings would hold "é" and "e\u{301}" equal).
    func written(_ f: Fixture, _ name: String) throws -> [[UInt8]] {
        var out = [[UInt8]]()
        try f.store.read { tx in
            try tx.edges(EdgeFilter(name: name), after: 0) { _, e in
                out.append(Array("\(e.source.key):\(e.rules.rawValue)".utf8))
                return true
            }
        }
        return out
    }

    @Test("pending edges are written in the order added; a re-add replaces and moves, a remove cancels")
    func orderAndSemantics() throws {
        let f = try Fixture()
        let d = ref("n", "d")
        let rules: [DeleteRules] = [.deleteDestinationIfSourceDeleted, .notifyIfSourceDeleted, .denyDeleteSource]
        try f.store.write { tx in
            // 100 pending, 90 of them removed, 40 more (the first of them compacts the list:
            // 100 slots, 10 live), and a flush after that leaves them all pending.
            for i in 0..<100 {
                try tx.addEdge(name: "e", source: ref("n", "s\(i)"), destination: .object(d), rules: rules[i % 3])
            }
            for i in 0..<90 {
                #expect(try tx.removeEdge(name: "e", source: ref("n", "s\(i)"), destination: .object(d)))
            }
            for i in 100..<140 {
                try tx.addEdge(name: "e", source: ref("n", "s\(i)"), destination: .object(d), rules: rules[i % 3])
            }
            try tx.flush()
            // Re-added with other rules: replaced, and now last.
            try tx.addEdge(
                name: "e", source: ref("n", "s91"), destination: .object(d), rules: .notifyIfDestinationDeleted)
            #expect(try tx.removeEdge(name: "e", source: ref("n", "s95"), destination: .object(d)))
            #expect(try !tx.removeEdge(name: "e", source: ref("n", "s95"), destination: .object(d)))
            for i in 0..<140 { try tx.put(ref("n", "s\(i)"), value: [:]) }
            try tx.put(d, value: [:])
        }
        var expected = [90, 92, 93, 94, 96, 97, 98, 99].map { "s\($0):\(rules[$0 % 3].rawValue)" }
        expected += (100..<140).map { "s\($0):\(rules[$0 % 3].rawValue)" }
        expected.append("s91:\(DeleteRules.notifyIfDestinationDeleted.rawValue)")
        #expect(try written(f, "e") == expected.map { Array($0.utf8) })
    }

    @Test("pending edges whose keys are canonically equal but differ in bytes are two edges")
    func bytesNotCanonicalEquivalence() throws {
        let f = try Fixture()
        let d = ref("n", "d")
        let composed = ref("n", "caf\u{e9}"), decomposed = ref("n", "cafe\u{301}")
        #expect(composed == decomposed)  // Swift's equality: the reason the key compares bytes
        try f.store.write { tx in
            try tx.addEdge(
                name: "e", source: composed, destination: .object(d), rules: .deleteDestinationIfSourceDeleted)
            try tx.addEdge(name: "e", source: decomposed, destination: .object(d), rules: .notifyIfSourceDeleted)
            // Removing one leaves the other.
            try tx.addEdge(name: "f", source: composed, destination: .object(d), rules: [])
            try tx.addEdge(name: "f", source: decomposed, destination: .object(d), rules: [])
            #expect(try tx.removeEdge(name: "f", source: composed, destination: .object(d)))
            try tx.put(composed, value: [:])
            try tx.put(decomposed, value: [:])
            try tx.put(d, value: [:])
        }
        let e = [
            "caf\u{e9}:\(DeleteRules.deleteDestinationIfSourceDeleted.rawValue)",
            "cafe\u{301}:\(DeleteRules.notifyIfSourceDeleted.rawValue)",
        ]
        #expect(try written(f, "e") == e.map { Array($0.utf8) })
        #expect(try written(f, "f") == [Array("cafe\u{301}:0".utf8)])
    }
}
