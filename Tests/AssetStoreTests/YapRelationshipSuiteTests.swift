// YapDatabase's own relationship tests (TestYapDatabaseRelationship.m), translated: protocol
// nodes become collection templates, YDB_* removals become edge.remove reasons. Where
// YapDatabase fired rules on bad edges, assetd refuses the commit (dangling_edge, assetd(8),
// DATA MODEL, Edges and delete rules).

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct YapRelationshipSuiteTests {
    let child = templateEdge("child", field: "children", to: "nodes", .deleteDestinationIfSourceDeleted)
    let p = ref("nodes", "p"), c1 = ref("nodes", "c1"), c2 = ref("nodes", "c2")

    @Test("testProtocol_Standard: derived edges count by name, source and destination, in and after the transaction")
    func protocolStandardCounts() throws {
        let f = try Fixture()
        try f.setTemplate("nodes", child)
        try f.store.write { tx in
            try tx.put(c1, value: [:])
            try tx.put(c2, value: [:])
            try tx.put(p, value: ["children": keys("c1", "c2")])
            try tx.flush()
            #expect(try tx.edgeCount(EdgeFilter(name: "child")) == 2)
            #expect(try tx.edgeCount(EdgeFilter(name: "child", source: p)) == 2)
            #expect(try tx.edgeCount(EdgeFilter(name: "child", destination: .object(c1))) == 1)
            #expect(try tx.edgeCount(EdgeFilter(name: "child", source: p, destination: .object(c2))) == 1)
        }
        #expect(try f.count(EdgeFilter(name: "child")) == 2)
        #expect(try f.count(EdgeFilter(name: "child", source: p)) == 2)
        #expect(try f.count(EdgeFilter(name: "child", destination: .object(c1))) == 1)
        #expect(try f.count(EdgeFilter(name: "child", source: p, destination: .object(c2))) == 1)
    }

    @Test("testProtocol_Standard: deleting both children empties the counts in the transaction; the parent stays")
    func protocolStandardDeleteChildren() throws {
        let f = try Fixture()
        try f.setTemplate("nodes", child)
        try f.put([(c1, [:]), (c2, [:]), (p, ["children": keys("c1", "c2")])])
        try f.store.write { tx in
            try tx.delete(c1)
            try tx.delete(c2)
            try tx.flush()
            #expect(try tx.edgeCount(EdgeFilter(name: "child")) == 0)
        }
        #expect(try f.exists(p))
        // Re-adding the children and re-putting the parent restores the edges.
        try f.put([(c1, [:]), (c2, [:]), (p, ["children": keys("c1", "c2")])])
        #expect(try f.count(EdgeFilter(name: "child", source: p)) == 2)
    }

    @Test("testProtocol_Standard: deleting the parent deletes its children")
    func protocolStandardDeleteParent() throws {
        let f = try Fixture()
        try f.setTemplate("nodes", child)
        try f.put([(c1, [:]), (c2, [:]), (p, ["children": keys("c1", "c2")])])
        let report = try f.store.write { tx in
            try tx.delete(p)
            try tx.flush()
            #expect(try tx.edgeCount(EdgeFilter(name: "child")) == 0)
            #expect(try !tx.exists(c1))
        }.report
        #expect(report.deletedRefs == [p, c1, c2])
        #expect(report.deleted.map(\.cause) == [.request, .cascade, .cascade])
        #expect(try !f.exists(c1) && !f.exists(c2))
    }

    @Test("testProtocol_Standard: insert and delete of the parent in one transaction, then flush, deletes the children")
    func protocolStandardInsertDelete() throws {
        let f = try Fixture()
        try f.setTemplate("nodes", child)
        try f.put([(c1, [:]), (c2, [:])])
        try f.store.write { tx in
            try tx.put(p, value: ["children": keys("c1", "c2")])
            try tx.delete(p)
            try tx.flush()
            #expect(try !tx.exists(c1))
            #expect(try !tx.exists(c2))
        }
        #expect(try !f.exists(c1) && !f.exists(c2) && !f.exists(p))
    }

    @Test("testProtocol_Standard: setting the children field to null deletes the children (delete by nil)")
    func protocolStandardNilField() throws {
        let f = try Fixture()
        try f.setTemplate("nodes", child)
        try f.put([(c1, [:]), (c2, [:]), (p, ["children": keys("c1", "c2")])])
        try f.put([(p, ["children": nil])])
        #expect(try !f.exists(c1) && !f.exists(c2))
        #expect(try f.exists(p))
    }

    @Test("testProtocol_Inverse: deleting a child removes only its edge; deleting the parent deletes the rest")
    func protocolInverse() throws {
        let f = try Fixture()
        try f.setTemplate(
            "kids", templateEdge("parent", field: "parent", to: "nodes", .deleteSourceIfDestinationDeleted))
        let k1 = ref("kids", "1"), k2 = ref("kids", "2")
        try f.put([(p, [:]), (k1, ["parent": "p"]), (k2, ["parent": "p"])])
        try f.delete(k1)
        #expect(try f.exists(p))
        #expect(try f.count(EdgeFilter(name: "parent")) == 1)
        let r = try f.delete(p)
        #expect(r.deletedRefs == [p, k2])
    }

    @Test("testProtocol_RetainCount: the retained node goes with its second retainer")
    func protocolRetainCount() throws {
        let f = try Fixture()
        try f.setTemplate("r", templateEdge("retained", field: "n", to: "nodes", .deleteDestinationIfAllSourcesDeleted))
        let n3 = ref("nodes", "n3"), r1 = ref("r", "1"), r2 = ref("r", "2")
        try f.put([(n3, [:]), (r1, ["n": "n3"]), (r2, ["n": "n3"])])
        try f.delete(r1)
        #expect(try f.exists(n3))
        #expect(try f.count(EdgeFilter(destination: .object(n3))) == 1)
        try f.delete(r2)
        #expect(try !f.exists(n3))
    }

    @Test("testProtocol_InverseRetainCount: a retainer goes when all its destinations went")
    func protocolInverseRetainCount() throws {
        let f = try Fixture()
        try f.setTemplate("r", templateEdge("retainer", field: "n", to: "nodes", .deleteSourceIfAllDestinationsDeleted))
        let n1 = ref("nodes", "n1"), n2 = ref("nodes", "n2"), n3 = ref("r", "n3")
        try f.put([(n1, [:]), (n2, [:]), (n3, ["n": keys("n1", "n2")])])
        try f.store.write { tx in
            try tx.delete(n1)
            try tx.delete(n2)
            try tx.flush()
            #expect(try tx.edgeCount(EdgeFilter(source: n3)) == 0)
            #expect(try !tx.exists(n3))
        }
        try f.put([(n1, [:]), (n2, [:]), (n3, ["n": keys("n1", "n2")])])
        try f.delete(n1)
        #expect(try f.exists(n3))
        try f.delete(n2)
        #expect(try !f.exists(n3))
        // Insert all, delete both destinations and flush in one transaction.
        try f.store.write { tx in
            try tx.put(n1, value: [:])
            try tx.put(n2, value: [:])
            try tx.put(n3, value: ["n": keys("n1", "n2")])
            try tx.flush()
            try tx.delete(n1)
            try tx.delete(n2)
            try tx.flush()
            #expect(try !tx.exists(n3))
        }
    }

    @Test("testManual_1: a manual edge is visible to readers; deleting the source and flushing deletes the destination")
    func manual1() throws {
        let f = try Fixture()
        let a = ref("s", "a"), b = ref("s", "b")
        try f.put([(a, "a"), (b, "b")])
        try f.addEdge("e", a, .object(b), .deleteDestinationIfSourceDeleted)
        #expect(try f.count(EdgeFilter(name: "e", source: a)) == 1)
        try f.store.write { tx in
            try tx.delete(a)
            try tx.flush()
            #expect(try tx.get(b) == nil)
        }
    }

    @Test("testManual_2: re-adding the same edge does not duplicate it; removal as source-deleted fires its rule")
    func manual2() throws {
        let f = try Fixture()
        let a = ref("s", "a"), b = ref("s", "b")
        try f.put([(a, "a"), (b, "b")])
        try f.addEdge("e", a, .object(b), .deleteDestinationIfSourceDeleted)
        try f.addEdge("e", a, .object(b), .deleteDestinationIfSourceDeleted)
        #expect(try f.count(EdgeFilter(name: "e")) == 1)
        let removed = try f.store.write { tx in
            try tx.removeEdge(name: "e", source: a, destination: .object(b), reason: .sourceDeleted)
        }
        #expect(removed.value)
        #expect(try f.count(EdgeFilter(name: "e")) == 0)
        #expect(try f.exists(a))
        #expect(try !f.exists(b))
        let missing = try f.store.write { tx in
            try tx.removeEdge(name: "e", source: a, destination: .object(b), reason: .sourceDeleted)
        }
        #expect(!missing.value)
    }

    @Test("testManual_3: removal with reason edge fires nothing; as destination-deleted it deletes the source")
    func manual3() throws {
        let f = try Fixture()
        let a = ref("s", "a"), b = ref("s", "b")
        try f.put([(a, "a"), (b, "b")])
        try f.addEdge("e", a, .object(b), .deleteDestinationIfSourceDeleted)
        try f.store.write { tx in try tx.removeEdge(name: "e", source: a, destination: .object(b), reason: .edge) }
        #expect(try f.exists(a) && f.exists(b))
        try f.addEdge("e", a, .object(b), .deleteSourceIfDestinationDeleted)
        try f.store.write { tx in
            try tx.removeEdge(name: "e", source: a, destination: .object(b), reason: .destinationDeleted)
        }
        #expect(try !f.exists(a))
        #expect(try f.exists(b))
    }

    @Test("testManual_4: an edge between objects that never exist fails the commit instead of being dropped")
    func manual4() throws {
        let f = try Fixture()
        let e = expectCode(.danglingEdge) {
            try f.store.write { tx in
                try tx.addEdge(
                    name: "e", source: ref("s", "ghost1"), destination: .object(ref("s", "ghost2")), rules: [])
            }
        }
        #expect(e != nil)
        #expect(try f.count(EdgeFilter()) == 0)
    }

    @Test("testEncryption1: file edges are found by every combination of name, source and path")
    func fileEdgeQueries() throws {
        let f = try Fixture()
        let path = try f.makeFile("enc/one")
        let a = ref("s", "a")
        try f.put([(a, [:])])
        try f.addEdge("random", a, .file(path), .deleteDestinationIfSourceDeleted)
        let other = try f.makeFile("enc/two")
        for filter in [
            EdgeFilter(name: "random"), EdgeFilter(name: "random", destination: .file(path)),
            EdgeFilter(destination: .file(path)), EdgeFilter(name: "random", source: a, destination: .file(path)),
            EdgeFilter(source: a, destination: .file(path)), EdgeFilter(name: "random", source: a),
            EdgeFilter(source: a),
            EdgeFilter(destination: .file("file://" + path)),
        ] {
            #expect(try f.count(filter) == 1, "\(filter)")
            #expect(try f.store.read { try $0.edges(filter) }.first?.destination == .file(path))
        }
        #expect(try f.count(EdgeFilter(source: a, destination: .file(other))) == 0)
        try f.delete(a)
        _ = try f.store.sweep()
        #expect(!f.exists(path))
    }

    @Test("testEncryption2: a file shared by two sources goes with the second")
    func sharedFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared")
        let k1 = ref("s", "key1"), k2 = ref("s", "key2")
        try f.put([(k1, [:]), (k2, [:])])
        try f.addEdge("shared", k1, .file(path), .deleteDestinationIfAllSourcesDeleted)
        try f.addEdge("shared", k2, .file(path), .deleteDestinationIfAllSourcesDeleted)
        try f.delete(k2)
        _ = try f.store.sweep()
        #expect(f.exists(path))
        #expect(try f.count(EdgeFilter(source: k2)) == 0)
        try f.delete(k1)
        _ = try f.store.sweep()
        #expect(!f.exists(path))
    }

    @Test("testDoubleEnumeration: nested edge enumeration across collections")
    func doubleEnumeration() throws {
        let f = try Fixture()
        try f.setTemplate("sports", templateEdge("team", field: "teams", to: "teams", []))
        try f.setTemplate("teams", templateEdge("player", field: "players", to: "players", []))
        try f.put([
            (ref("players", "p1"), [:]), (ref("players", "p2"), [:]), (ref("players", "p3"), [:]),
            (ref("players", "p4"), [:]),
            (ref("teams", "t1"), ["players": keys("p1", "p2")]), (ref("teams", "t2"), ["players": keys("p3", "p4")]),
            (ref("sports", "soccer"), ["teams": keys("t1", "t2")]),
        ])
        var found = 0
        try f.store.read { r in
            for team in try r.edges(EdgeFilter(name: "team", source: ref("sports", "soccer"))) {
                guard case .object(let t) = team.destination else { continue }
                found += try r.edges(EdgeFilter(name: "player", source: t)).count
            }
        }
        #expect(found == 4)
    }

    @Test("testIssue399: manual edges with a missing source or destination fail the commit and fire nothing")
    func issue399() throws {
        let f = try Fixture()
        let path = try f.makeFile("keep")
        let a = ref("s", "a")
        try f.put([(a, [:])])
        for (src, dst) in [
            (a, EdgeEnd.object(ref("s", "missing"))), (ref("s", "missing"), .object(a)),
            (ref("s", "m1"), .object(ref("s", "m2"))), (ref("s", "missing"), .file(path)),
        ] {
            let e = expectCode(.danglingEdge) {
                try f.store.write { tx in
                    try tx.addEdge(name: "e", source: src, destination: dst, rules: .deleteDestinationIfSourceDeleted)
                }
            }
            #expect(e != nil)
        }
        _ = try f.store.sweep()
        #expect(f.exists(path))
        #expect(try f.exists(a))
        #expect(try f.store.pending().isEmpty)
    }

    @Test("testIssue399_protocol: a derived edge to a missing object fails the put and deletes nothing")
    func issue399Protocol() throws {
        let f = try Fixture()
        try f.setTemplate("s", templateEdge("t", field: "to", to: "s", .deleteSourceIfDestinationDeleted))
        try f.put([(ref("s", "target"), [:])])
        let e = expectCode(.danglingEdge) { try f.put([(ref("s", "a"), ["to": keys("target", "missing")])]) }
        #expect(e != nil)
        #expect(try !f.exists(ref("s", "a")))
        try f.put([(ref("s", "a"), ["to": keys("target")])])
        let e2 = expectCode(.danglingEdge) { try f.put([(ref("s", "a"), ["to": keys("target", "missing")])]) }
        #expect(e2 != nil)
        #expect(try f.exists(ref("s", "a")))
        #expect(try f.count(EdgeFilter(source: ref("s", "a"))) == 1)
    }

    @Test("testDeleteAndNotify (#426): a node both notified and deleted by one edge is deleted, not notified")
    func deleteAndNotify() throws {
        let f = try Fixture()
        let a = ref("s", "parent"), b = ref("s", "child")
        try f.put([(a, [:]), (b, [:])])
        try f.addEdge("e", a, .object(b), [.deleteDestinationIfSourceDeleted, .notifyIfSourceDeleted])
        let r = try f.delete(a)
        #expect(r.deletedRefs == [a, b])
        #expect(r.notifications.isEmpty)
        // Notify alone: the surviving child is notified exactly once.
        try f.put([(a, [:]), (b, [:])])
        try f.addEdge("e", a, .object(b), [.notifyIfSourceDeleted])
        let r2 = try f.delete(a)
        #expect(r2.notifications.map(\.node) == [b])
        #expect(r2.notifications.first?.reason == .sourceDeleted)
    }
}
