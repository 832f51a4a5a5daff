// Adversarial review of the rule engine (SPEC §2–§4, §8). Each test here failed on the code
// under review because of a real defect, unless its comment says it pins down a verified,
// previously untested behaviour.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct ReviewFindingsTests {
    // MARK: removeEdge on an edge added earlier in the same transaction

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
        // SPEC §2: the source "goes" when "the edge is removed with reason sourceDeleted".
        #expect(r.deletedRefs == [d])
        #expect(try !f.exists(d))
    }

    @Test("the same: notifyIfSourceDeleted on such an edge notifies the destination")
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

    // MARK: manual and derived edges with the same (name, source, destination)

    @Test("a put never takes over a manual edge: a later put without the field keeps the manual edge and the file")
    func putDoesNotTakeOverManualEdge() throws {
        let f = try Fixture()
        let path = try f.makeFile("pinned")
        let s = ref("m", "s")
        try f.put([(s, [:])])
        // A manual edge that owns the file, under the name the built-in template uses.
        try f.addEdge("file", s, .file(path), .deleteDestinationIfAllSourcesDeleted)
        try f.put([(s, ["file": .string(path)])])
        let r = try f.put([(s, [:])])
        // "manual edges stay" (SPEC §2): only a derived edge may be dropped by a put.
        #expect(r.filesQueued.isEmpty)
        #expect(try f.store.read { try $0.edges(EdgeFilter(source: s)) }.map(\.kind) == [.manual])
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }

    @Test("a put with an unchanged value does not silently replace the rules of a manual edge on the same triple")
    func putDoesNotRewriteManualRules() throws {
        let f = try Fixture()
        try f.setTemplate("t", templateEdge("orig", field: "orig", to: "o", .deleteSourceIfDestinationDeleted))
        let o = ref("o", "1"), t = ref("t", "1")
        try f.put([(o, [:]), (t, ["orig": "1"])])
        // The user replaces the rules of the (orig, t/1, o/1) edge: SPEC §1 "adding the same
        // triple again replaces its rules".
        try f.addEdge("orig", t, .object(o), .notifyIfDestinationDeleted)
        try f.put([(t, ["orig": "1"])])  // same value again
        #expect(try f.store.read { try $0.edges(EdgeFilter(source: t)) }.map(\.rules) == [.notifyIfDestinationDeleted])
    }

    // MARK: notify once per edge identity

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
        // SPEC §2: "notified exactly once per edge per transaction, whichever path removed the edge".
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

    // MARK: flush in the middle of a transaction

    @Test("an explicit flush does not reject an edge to an object created later in the transaction")
    func flushBeforeDestinationExists() throws {
        let f = try Fixture()
        try f.setTemplate("t", templateEdge("parent", field: "parent", to: "p", .deleteSourceIfDestinationDeleted))
        // SPEC §2: "Edges may name objects that are created later in the same transaction; at
        // commit an edge whose source or destination object does not exist fails".
        try f.store.write { tx in
            try tx.put(ref("t", "1"), value: ["parent": "x"])
            try tx.flush()
            try tx.put(ref("p", "x"), value: [:])
        }
        #expect(try f.count(EdgeFilter(name: "parent")) == 1)
    }

    @Test("a flush before an edge's destination exists leaves it pending; the commit derives every put object's edges")
    func flushErrorLosesEdges() throws {
        let f = try Fixture()
        let path = try f.makeFile("lost")
        try f.setTemplate("t", templateEdge("parent", field: "parent", to: "p", .deleteSourceIfDestinationDeleted))
        let a = ref("m", "a"), t = ref("t", "1")
        try f.store.write { tx in
            try tx.put(t, value: ["parent": "x"])
            try tx.put(a, value: ["file": .string(path)])
            try tx.flush()
            try tx.put(ref("p", "x"), value: [:])
        }
        // The commit went through, so the objects' values must match their edges (and index).
        #expect(try f.count(EdgeFilter(source: t)) == 1)
        #expect(try f.count(EdgeFilter(source: a)) == 1)
        #expect(try f.store.read { try $0.get(a) }?.files.map(\.path) == [path])
        // The file a's value names is not owned: deleting a leaks it.
        #expect(try f.delete(a).filesQueued == [path])
    }

    // MARK: templates

    @Test("template.set and a put of an unchanged value in one transaction do not unlink the object's file")
    func templateSetWithPutDoesNotUnlink() throws {
        let f = try Fixture()
        let path = try f.makeFile("kept")
        let o = ref("docs", "o")
        try f.put([(o, ["file": .string(path)])])
        let r = try f.store.write { tx in
            try tx.put(o, value: ["file": .string(path)])
            // The field file is now a weak "attachment": the built-in owning edge is no longer declared.
            try tx.setTemplate(collection: "docs", edges: [templateEdge("attachment", field: "file", to: "file", [])])
        }.report
        // Doing the same in two transactions keeps the file (template changes are quiet).
        #expect(r.filesQueued.isEmpty)
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }

    // MARK: registry

    @Test("removing an edge to a never-referenced file leaves no registry row")
    func removeEdgeRegistersNothing() throws {
        let f = try Fixture()
        let path = try f.makeFile("stranger")
        let s = ref("n", "s")
        try f.put([(s, [:])])
        let removed = try f.store.write { tx in
            try tx.removeEdge(name: "x", source: s, destination: .file(path))
        }.value
        #expect(!removed)
        // SPEC §1: "a registry row per referenced file".
        #expect(try f.store.read { try $0.file(path) } == nil)
    }

    // MARK: reads

    @Test("list with a huge limit does not crash")
    func listHugeLimit() async {
        // SPEC §8 I6: no input crashes the daemon. `limit + 1 + hidden.count` overflowed.
        let f = try! Fixture()
        try! f.put([(ref("n", "a"), 1)])
        #expect(expectCode(.invalidParams) { try f.store.read { try $0.list(collection: "n", limit: Int.max) } } != nil)
        #expect(try! f.store.read { try $0.list(collection: "n", limit: 100_000) }.keys == ["a"])
    }

    // MARK: nullify

    @Test("one edge name declared on two fields is refused, so nullify always knows the field")
    func nullifyBothFieldsOfOneEdge() throws {
        let f = try Fixture()
        // Two declarations of one edge name on two fields could not both be nulled: refused.
        let e = expectCode(.invalidParams) {
            try f.setTemplate(
                "s",
                templateEdge("ref", field: "a", to: "d", .notifyIfDestinationDeleted),
                templateEdge("ref", field: "b", to: "d", .notifyIfDestinationDeleted))
        }
        #expect(e != nil)
        #expect(try f.store.read { try $0.template(collection: "s") }.isEmpty)
        // A template named like the built-in one replaces it instead of sitting beside it.
        try f.setTemplate("s", templateEdge("file", field: "thumb", to: "file", []))
        let path = try f.makeFile("t")
        try f.put([(ref("s", "2"), ["file": .string(path)])])
        #expect(try f.count(EdgeFilter(source: ref("s", "2"))) == 0)
    }

    // MARK: reads inside a write transaction

    @Test("inside a write transaction, file() does not list edges of objects the transaction deleted")
    func fileReportHidesDeletedSources() throws {
        let f = try Fixture()
        let path = try f.makeFile("seen")
        let a = ref("m", "a"), b = ref("m", "b")
        try f.put([(a, ["file": .string(path)]), (b, ["file": .string(path)])])
        try f.store.write { tx in
            try tx.delete(a)
            #expect(try tx.edges(EdgeFilter(destination: .file(path))).map(\.source) == [b])
            #expect(try tx.file(path)?.edges.map(\.source) == [b])
        }
    }

    // MARK: pinned behaviour (these pass; verified right and not covered elsewhere)

    // PINNED: a file field holding the same path twice (two spellings) derives one edge;
    // dropping one occurrence keeps the file, dropping both queues it once.
    @Test("pinned: the same file twice in a field is one edge; it goes only when no occurrence is left")
    func sameFileTwiceInField() throws {
        let f = try Fixture()
        let path = try f.makeFile("dup")
        let o = ref("m", "o")
        try f.put([(o, ["file": [.string(path), .string("file://" + path), 7, nil]])])
        #expect(try f.count(EdgeFilter(source: o)) == 1)
        #expect(try f.put([(o, ["file": [.string(path)]])]).filesQueued.isEmpty)
        #expect(try f.put([(o, ["file": [5]])]).filesQueued == [path])
    }

    // PINNED: two retainers of one file deleted in one transaction: the count seen while the
    // first is processed includes the second (still pending); the file is queued once, by the second.
    @Test("pinned: two retainers deleted together queue their shared file exactly once")
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

    // PINNED: Nullify on a to-many field holding non-strings and the deleted key twice removes
    // just the strings equal to the key and keeps the rest in order.
    @Test("pinned: nullify on an array with non-strings and a repeated key keeps everything else")
    func nullifyMixedArray() throws {
        let f = try Fixture()
        try f.setTemplate("l", templateEdge("item", field: "$.x.items", to: "i", .notifyIfDestinationDeleted))
        let l = ref("l", "1")
        try f.put([(ref("i", "a"), [:]), (ref("i", "b"), [:]),
                   (l, ["x": ["items": ["a", 1, "b", nil, "a", ["a"]]]])])
        let r = try f.delete(ref("i", "a"))
        #expect(try f.value(l) == ["x": ["items": [1, "b", nil, ["a"]]]])
        #expect(r.notifications.count == 1)
        #expect(try f.count(EdgeFilter(source: l)) == 1)
    }

    // MARK: unlink queue

    @Test("a file taken again by a later transaction is kept even if that holder is later removed with reason edge")
    func takenAgainDropsQueueRow() throws {
        let f = try Fixture { $0.unlinkDelay = 60 }
        let path = try f.makeFile("again")
        let a = ref("m", "a"), b = ref("m", "b")
        try f.put([(a, ["file": .string(path)]), (b, [:])])
        #expect(try f.delete(a).filesQueued == [path])
        // A later transaction takes the file again (SPEC §4.3: "then the row is dropped and the file kept")...
        try f.addEdge("keep", b, .file(path), .deleteDestinationIfAllSourcesDeleted)
        // ...and a still later one removes that edge with reason edge, which "fires nothing".
        let r = try f.store.write { try $0.removeEdge(name: "keep", source: b, destination: .file(path)) }.report
        #expect(r.filesQueued.isEmpty)
        f.clock.advance(61)
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }

    // PINNED: SPEC §2 "a file that a rule deletes is a deleted node like any other": an object
    // put in the same transaction with the file in its value loses its edge to it (the put does
    // not save the file), its registry row goes, and the object's files and index follow.
    @Test("pinned: a put naming a file that a rule deletes in the same commit does not keep the file")
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
