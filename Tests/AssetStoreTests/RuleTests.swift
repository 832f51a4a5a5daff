// The delete rules (assetd(8), DATA MODEL, Edges and delete rules): reference counting
// per edge across names, weak edges, files deleted by rules as nodes, cascades and
// cycles, and the rule-combination check.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct RuleTests {
    @Test("two edges from one source to one file: dropping one keeps the file")
    func twoEdgesOneSourceOneFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("two/edges")
        let s = ref("media", "s")
        try f.put([(s, ["file": .string(path)])])
        try f.addEdge("thumb", s, .file(path), .deleteDestinationIfAllSourcesDeleted)
        try f.store.write { tx in
            try tx.removeEdge(name: "thumb", source: s, destination: .file(path), reason: .sourceDeleted)
        }
        #expect(try f.store.pending().isEmpty)
        // And the other way round: the value drops the file, the manual edge still holds it.
        try f.addEdge("thumb", s, .file(path), .deleteDestinationIfAllSourcesDeleted)
        let r = try f.put([(s, [:])])
        #expect(r.filesQueued.isEmpty)
        _ = try f.store.sweep()
        #expect(f.exists(path))
        #expect(try f.store.read { try $0.file(path) }?.edges.map(\.name) == ["thumb"])
    }

    @Test("a weak edge does not keep a file alive, and goes with it as destination-deleted")
    func weakEdgeDoesNotRetain() throws {
        let f = try Fixture()
        let path = try f.makeFile("weak")
        let owner = ref("media", "owner"), watcher = ref("media", "watcher")
        try f.put([(owner, ["file": .string(path)]), (watcher, [:])])
        try f.addEdge("sees", watcher, .file(path), .notifyIfDestinationDeleted)
        let r = try f.delete(owner)
        #expect(r.filesQueued == [path])
        #expect(r.notifications.map(\.node) == [watcher])
        #expect(try f.count(EdgeFilter(source: watcher)) == 0)
        _ = try f.store.sweep()
        #expect(!f.exists(path))
    }

    @Test("a weak edge does not keep an object alive")
    func weakEdgeObject() throws {
        let f = try Fixture()
        let d = ref("n", "d"), strong = ref("n", "strong"), weak = ref("n", "weak")
        try f.put([(d, [:]), (strong, [:]), (weak, [:])])
        try f.addEdge("keeps", strong, .object(d), .deleteDestinationIfAllSourcesDeleted)
        try f.addEdge("looks", weak, .object(d), [])
        try f.delete(strong)
        #expect(try !f.exists(d))
        #expect(try f.exists(weak))
    }

    @Test("retaining edges count across names and collections")
    func countingAcrossNames() throws {
        let f = try Fixture()
        let d = ref("albums", "a"), song = ref("songs", "s"), art = ref("artwork", "w")
        try f.put([(d, [:]), (song, [:]), (art, [:])])
        try f.addEdge("album", song, .object(d), .deleteDestinationIfAllSourcesDeleted)
        try f.addEdge("albumArtwork", art, .object(d), .deleteDestinationIfAllSourcesDeleted)
        try f.delete(song)
        #expect(try f.exists(d))
        try f.delete(art)
        #expect(try !f.exists(d))
    }

    @Test("a file a rule deletes goes as a node: other edges to it fire their destination rules")
    func fileDeletedAsNode() throws {
        let f = try Fixture()
        let path = try f.makeFile("node")
        let owner = ref("m", "owner"), thumb = ref("m", "thumb")
        try f.put([(owner, [:]), (thumb, [:])])
        try f.addEdge("orig", owner, .file(path), .deleteDestinationIfSourceDeleted)
        try f.addEdge("of", thumb, .file(path), .deleteSourceIfDestinationDeleted)
        let r = try f.delete(owner)
        #expect(r.deletedRefs == [owner, thumb])
        #expect(r.filesQueued == [path])
    }

    @Test("both 'All' rules on one edge work in each direction")
    func bothAllRules() throws {
        let f = try Fixture()
        let rules: DeleteRules = [.deleteSourceIfAllDestinationsDeleted, .deleteDestinationIfAllSourcesDeleted]
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("both", s, .object(d), rules)
        try f.delete(d)
        #expect(try !f.exists(s))
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("both", s, .object(d), rules)
        try f.delete(s)
        #expect(try !f.exists(d))
    }

    @Test("cycles of cascading and retaining edges terminate")
    func cyclesTerminate() throws {
        let f = try Fixture()
        let a = ref("n", "a"), b = ref("n", "b"), c = ref("n", "c")
        try f.put([(a, [:]), (b, [:]), (c, [:])])
        try f.addEdge("next", a, .object(b), .deleteDestinationIfSourceDeleted)
        try f.addEdge("next", b, .object(c), .deleteDestinationIfSourceDeleted)
        try f.addEdge("next", c, .object(a), .deleteDestinationIfSourceDeleted)
        try f.addEdge("self", a, .object(a), .deleteDestinationIfAllSourcesDeleted)
        let r = try f.delete(b)
        #expect(r.deletedRefs == [b, c, a])
        #expect(try f.count(EdgeFilter()) == 0)
    }

    @Test("a 10,000-long cascade chain runs to the end in one commit")
    func longChain() throws {
        let f = try Fixture()
        try f.setTemplate("chain", templateEdge("next", field: "next", to: "chain", .deleteDestinationIfSourceDeleted))
        let n = 10_000
        try f.store.write { tx in
            for i in 0..<n {
                try tx.put(ref("chain", "\(i)"), value: i + 1 < n ? ["next": .string("\(i + 1)")] : [:])
            }
        }
        let r = try f.delete(ref("chain", "0"))
        #expect(r.deleted.count == n)
        #expect(try f.store.read { try $0.objectCount() } == 0)
    }

    static let illegal: [(DeleteRules, Bool, [String])] = [
        (
            [.deleteDestinationIfSourceDeleted, .deleteDestinationIfAllSourcesDeleted], false,
            ["deleteDestinationIfSourceDeleted", "deleteDestinationIfAllSourcesDeleted"]
        ),
        (
            [.deleteSourceIfDestinationDeleted, .deleteSourceIfAllDestinationsDeleted], false,
            ["deleteSourceIfDestinationDeleted", "deleteSourceIfAllDestinationsDeleted"]
        ),
        (
            [.denyDeleteDestination, .notifyIfDestinationDeleted], false,
            ["denyDeleteDestination", "notifyIfDestinationDeleted"]
        ),
        (
            [.denyDeleteDestination, .deleteSourceIfDestinationDeleted], false,
            ["denyDeleteDestination", "deleteSourceIfDestinationDeleted"]
        ),
        (
            [.denyDeleteSource, .deleteDestinationIfAllSourcesDeleted], false,
            ["denyDeleteSource", "deleteDestinationIfAllSourcesDeleted"]
        ),
        ([.denyDeleteSource, .notifyIfSourceDeleted], false, ["denyDeleteSource", "notifyIfSourceDeleted"]),
        ([.notifyIfSourceDeleted], true, ["notifyIfSourceDeleted", "file"]),
        ([.denyDeleteSource], true, ["denyDeleteSource", "file"]),
        ([.denyDeleteDestination], true, ["denyDeleteDestination", "file"]),
    ]

    @Test("illegal rule combinations are rejected with invalid_rules naming the pair", arguments: illegal)
    func illegalCombinations(rules: DeleteRules, file: Bool, named: [String]) throws {
        let f = try Fixture()
        let path = try f.makeFile("x")
        try f.put([(ref("n", "a"), [:]), (ref("n", "b"), [:])])
        let e = expectCode(.invalidRules) {
            try f.addEdge("e", ref("n", "a"), file ? .file(path) : .object(ref("n", "b")), rules)
        }
        #expect(e?.detail == .array(named.map(JSONValue.string)))
        #expect(try f.count(EdgeFilter()) == 0)
    }

    @Test(
        "legal combinations of rules are accepted",
        arguments: [
            DeleteRules([.deleteDestinationIfAllSourcesDeleted, .deleteSourceIfDestinationDeleted]),
            [.deleteDestinationIfSourceDeleted, .notifyIfDestinationDeleted],
            [.denyDeleteSource, .denyDeleteDestination],
            [.denyDeleteDestination, .notifyIfSourceDeleted], [],
        ])
    func legalCombinations(rules: DeleteRules) throws {
        let f = try Fixture()
        try f.put([(ref("n", "a"), [:]), (ref("n", "b"), [:])])
        try f.addEdge("e", ref("n", "a"), .object(ref("n", "b")), rules)
        #expect(try f.store.read { try $0.edges(EdgeFilter()) }.first?.rules == rules)
    }

    @Test("rules parse from names or the bitmask, and unknown names are invalid_rules")
    func ruleParsing() throws {
        #expect(
            try DeleteRules(json: ["notifyIfSourceDeleted", "denyDeleteDestination"]) == DeleteRules(rawValue: 129))
        #expect(
            try DeleteRules(json: 40) == [.deleteDestinationIfSourceDeleted, .deleteDestinationIfAllSourcesDeleted])
        #expect(expectCode(.invalidRules) { try DeleteRules(json: ["deleteEverything"]) } != nil)
        #expect(expectCode(.invalidRules) { try DeleteRules(json: 256) } != nil)
        #expect(DeleteRules(rawValue: 129).names == ["notifyIfSourceDeleted", "denyDeleteDestination"])
    }

    @Test("notify fires once per edge, even when the edge goes by two paths in one transaction")
    func notifyOnce() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("e", s, .object(d), .notifyIfSourceDeleted)
        let r = try f.store.write { tx in
            try tx.removeEdge(name: "e", source: s, destination: .object(d), reason: .sourceDeleted)
            try tx.delete(s)
        }.report
        #expect(r.notifications.count == 1)
        #expect(r.notifications.first?.node == d)
    }

    @Test("a node deleted in the same transaction is never notified")
    func noNotifyForDeleted() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("e", s, .object(d), .notifyIfSourceDeleted)
        let r = try f.delete(s, d)
        #expect(r.notifications.isEmpty)
    }

    @Test("a derived edge dropped from the value fires source-deleted: the file it owned is queued")
    func droppedDerivedEdgeQueuesFile() throws {
        let f = try Fixture()
        let a = try f.makeFile("v1"), b = try f.makeFile("v2")
        let o = ref("m", "o")
        try f.put([(o, ["file": .string(a)])])
        let r = try f.put([(o, ["file": .string(b)])])
        #expect(r.filesQueued == [a])
        #expect(r.edgesRemoved.map(\.reason) == [.sourceDeleted])
        _ = try f.store.sweep()
        #expect(!f.exists(a) && f.exists(b))
    }

    @Test("a file edge removed with reason sourceDeleted queues the file; with reason edge it does not")
    func removedWithReasonQueuesFile() throws {
        let f = try Fixture()
        let a = try f.makeFile("r1"), b = try f.makeFile("r2")
        let o = ref("m", "o")
        try f.put([(o, [:])])
        try f.addEdge("owns", o, .file(a), .deleteDestinationIfSourceDeleted)
        try f.addEdge("owns", o, .file(b), .deleteDestinationIfSourceDeleted)
        let r1 = try f.store.write {
            try $0.removeEdge(name: "owns", source: o, destination: .file(a), reason: .sourceDeleted)
        }
        #expect(r1.report.filesQueued == [a])
        let r2 = try f.store.write { try $0.removeEdge(name: "owns", source: o, destination: .file(b), reason: .edge) }
        #expect(r2.report.filesQueued.isEmpty)
        #expect(try f.store.read { try $0.file(b) } == nil)  // unreferenced: out of the registry, still on disk
        #expect(f.exists(b))
    }

    @Test("an edge added before its source existed, then removed with reason sourceDeleted, fires its rules")
    func removeWithReasonOfEdgeAddedBeforeSource() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(d, [:])])
        let r = try f.store.write { tx in
            try tx.addEdge(name: "e", source: s, destination: .object(d), rules: .deleteDestinationIfSourceDeleted)
            try tx.put(s, value: [:])
            // Both ends exist now: this is the same edge as if s had existed before.
            #expect(try tx.removeEdge(name: "e", source: s, destination: .object(d), reason: .sourceDeleted))
        }.report
        // The source goes when the edge is removed with reason sourceDeleted.
        #expect(r.deletedRefs == [d])
        #expect(try !f.exists(d))
    }

    // The count seen while the first retainer is processed includes the second (still
    // pending): the file is queued once, by the second.
    @Test("two retainers deleted together queue their shared file exactly once")
    func twoRetainersDeletedTogether() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared")
        let a = ref("m", "a"), b = ref("m", "b"), w = ref("m", "w")
        try f.put([(a, ["file": .string(path)]), (b, ["file": .string(path)]), (w, [:])])
        try f.addEdge("sees", w, .file(path), .notifyIfDestinationDeleted)
        let r = try f.delete(a, b)
        #expect(r.filesQueued == [path])
        #expect(r.notifications.map(\.node) == [w])
    }

    // Nullify on a to-many field removes just the strings equal to the deleted key and keeps
    // the rest in order.
    @Test("nullify on an array with non-strings and a repeated key keeps everything else")
    func nullifyMixedArray() throws {
        let f = try Fixture()
        try f.setTemplate("l", templateEdge("item", field: "$.x.items", to: "i", .notifyIfDestinationDeleted))
        let l = ref("l", "1")
        try f.put([
            (ref("i", "a"), [:]), (ref("i", "b"), [:]),
            (l, ["x": ["items": ["a", 1, "b", nil, "a", ["a"]]]]),
        ])
        let r = try f.delete(ref("i", "a"))
        #expect(try f.value(l) == ["x": ["items": [1, "b", nil, ["a"]]]])
        #expect(r.notifications.count == 1)
        #expect(try f.count(EdgeFilter(source: l)) == 1)
    }

    // A file that a rule deletes is a deleted node like any other: an object put in the same
    // transaction with the file in its value loses its edge to it (the put does not save the
    // file), its registry row goes, and the object's files and index follow.
    @Test("a put naming a file that a rule deletes in the same commit does not keep the file")
    func putNamingFileDeletedByRule() throws {
        let f = try Fixture()
        let path = try f.makeFile("ruled")
        let a = ref("m", "a"), b = ref("m", "b")
        try f.put([(a, [:])])
        try f.addEdge("owns", a, .file(path), .deleteDestinationIfSourceDeleted)
        let r = try f.store.write { tx in
            try tx.put(b, value: ["file": .string(path)])
            try tx.delete(a)
        }.report
        #expect(r.filesQueued == [path])
        #expect(r.edgesRemoved.contains { $0.edge.source == b && $0.reason == .destinationDeleted })
        #expect(try f.store.read { try $0.get(b) }?.files.isEmpty == true)
        #expect(try f.store.read { try $0.file(path) } == nil)
        #expect(try f.store.sweep().unlinked == [path])
    }
}

@Suite struct NotifyIdentityTests {
    @Test("an edge removed, added again and removed again in one transaction notifies once")
    func readdedEdgeNotifiesOnce() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("e", s, .object(d), .notifyIfSourceDeleted)
        let r = try f.store.write { tx in
            try tx.removeEdge(name: "e", source: s, destination: .object(d), reason: .sourceDeleted)
            try tx.flush()
            try tx.addEdge(name: "e", source: s, destination: .object(d), rules: .notifyIfSourceDeleted)
            try tx.removeEdge(name: "e", source: s, destination: .object(d), reason: .sourceDeleted)
        }.report
        #expect(r.notifications.count == 1)
    }

    @Test("an edge added before its source existed, then removed with reason sourceDeleted, notifies the destination")
    func removeWithReasonOfEdgeAddedBeforeSourceNotifies() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(d, [:])])
        let r = try f.store.write { tx in
            try tx.addEdge(name: "e", source: s, destination: .object(d), rules: .notifyIfSourceDeleted)
            try tx.put(s, value: [:])
            try tx.removeEdge(name: "e", source: s, destination: .object(d), reason: .sourceDeleted)
        }.report
        #expect(r.notifications.map(\.node) == [d])
    }

    @Test("a file edge removed, added again and removed again in one transaction notifies once")
    func readdedFileEdgeNotifiesOnce() throws {
        let f = try Fixture()
        let path = try f.makeFile("watched")
        let w = ref("n", "w")
        try f.put([(w, [:])])
        try f.addEdge("sees", w, .file(path), .notifyIfDestinationDeleted)
        let r = try f.store.write { tx in
            try tx.removeEdge(name: "sees", source: w, destination: .file(path), reason: .destinationDeleted)
            try tx.flush()  // the registry row goes: nothing references the file
            try tx.addEdge(name: "sees", source: w, destination: .file(path), rules: .notifyIfDestinationDeleted)
            try tx.removeEdge(name: "sees", source: w, destination: .file(path), reason: .destinationDeleted)
        }.report
        // Notified exactly once per edge per transaction, whichever path removed the edge.
        #expect(r.notifications.count == 1)
    }

    @Test("a file deleted by a rule twice in one transaction (flush between) notifies a watcher once")
    func fileDeletedTwiceNotifiesOnce() throws {
        let f = try Fixture()
        let path = try f.makeFile("twice")
        let a = ref("n", "a"), b = ref("n", "b"), w = ref("n", "w")
        try f.put([(a, [:]), (b, [:]), (w, [:])])
        try f.addEdge("owns", a, .file(path), .deleteDestinationIfSourceDeleted)
        try f.addEdge("sees", w, .file(path), .notifyIfDestinationDeleted)
        let r = try f.store.write { tx in
            try tx.delete(a)
            try tx.flush()
            try tx.addEdge(name: "owns", source: b, destination: .file(path), rules: .deleteDestinationIfSourceDeleted)
            try tx.addEdge(name: "sees", source: w, destination: .file(path), rules: .notifyIfDestinationDeleted)
            try tx.delete(b)
        }.report
        #expect(r.notifications.filter { $0.node == w }.count == 1)
    }
}
