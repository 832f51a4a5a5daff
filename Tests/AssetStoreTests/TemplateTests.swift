// Collection templates (assetd(8), DATA MODEL, Collection templates): derived edges from
// fields and JSON paths, one-to-many, the built-in `file` template and its override,
// per-collection scope, persistence.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct TemplateTests {
    @Test("the built-in file field derives owning file edges from a path or an array of paths")
    func builtInFileField() throws {
        let f = try Fixture()
        let a = try f.makeFile("a"), b = try f.makeFile("b")
        try f.put([
            (ref("x", "one"), ["file": .string(a)]),
            (ref("y", "many"), ["file": [.string(a), .string("file://" + b)]]),
        ])
        let edges = try f.store.read { try $0.edges(EdgeFilter(name: "file")) }
        #expect(edges.count == 3)
        #expect(
            edges.allSatisfy { $0.rules == .deleteDestinationIfAllSourcesDeleted && $0.kind == .derived(field: "file") }
        )
        #expect(Set(edges.map(\.destination)) == [.file(a), .file(b)])
    }

    @Test("a collection template on the field file replaces the built-in one")
    func overrideFileTemplate() throws {
        let f = try Fixture()
        let a = try f.makeFile("a")
        try f.setTemplate("weak", templateEdge("link", field: "file", to: "file", .notifyIfDestinationDeleted))
        try f.put([(ref("weak", "w"), ["file": .string(a)])])
        let edges = try f.store.read { try $0.edges(EdgeFilter(source: ref("weak", "w"))) }
        #expect(edges.map(\.name) == ["link"])
        try f.delete(ref("weak", "w"))
        _ = try f.store.sweep()
        #expect(f.exists(a))  // a weak link never owned it
    }

    @Test("templates apply only to their own collection")
    func templatesScoped() throws {
        let f = try Fixture()
        try f.setTemplate(
            "thumbs", templateEdge("original", field: "orig", to: "originals", .deleteSourceIfDestinationDeleted))
        try f.put([
            (ref("originals", "o"), [:]), (ref("thumbs", "t"), ["orig": "o"]), (ref("other", "t"), ["orig": "o"]),
        ])
        #expect(try f.count(EdgeFilter(name: "original")) == 1)
        let r = try f.delete(ref("originals", "o"))
        #expect(r.deletedRefs == [ref("originals", "o"), ref("thumbs", "t")])
    }

    @Test("a collection's templates do not apply to one whose name is only canonically equivalent")
    func templatesByBytes() throws {
        let (composed, decomposed) = ("caf\u{e9}", "cafe\u{301}")
        let f = try Fixture()
        try f.setTemplate(composed, templateEdge("original", field: "orig", to: "originals", []))
        try f.setTemplate(decomposed, templateEdge("source", field: "src", to: "originals", []))
        for reopened in [false, true] {
            if reopened { try f.reopen() }
            let k = reopened ? "2" : "1"
            try f.put([
                (ref("originals", "o"), [:]), (ref(composed, k), ["orig": "o", "src": "o"]),
                (ref(decomposed, k), ["orig": "o", "src": "o"]),
            ])
            let edges = try f.store.read { try $0.edges(EdgeFilter(destination: .object(ref("originals", "o")))) }
            let from = { (c: String) in
                edges.filter { $0.source.collection.utf8.elementsEqual(c.utf8) && $0.source.key == k }
            }
            #expect(from(composed).map(\.name) == ["original"], "reopened: \(reopened)")
            #expect(from(decomposed).map(\.name) == ["source"], "reopened: \(reopened)")
            #expect(try f.store.read { try $0.template(collection: decomposed) }.map(\.name) == ["source"])
        }
    }

    @Test("a template edge renamed to a canonically equivalent name takes the new name's bytes")
    func renameByBytes() throws {
        let (composed, decomposed) = ("vignett\u{e9}", "vignette\u{301}")
        let f = try Fixture()
        let a = try f.makeFile("a")
        try f.setTemplate(
            "media", templateEdge(composed, field: "file", to: "file", .deleteDestinationIfAllSourcesDeleted))
        try f.put([(ref("media", "m"), ["file": .string(a)])])
        try f.setTemplate(
            "media", templateEdge(decomposed, field: "file", to: "file", .deleteDestinationIfAllSourcesDeleted))
        let names = try f.store.read { try $0.edges(EdgeFilter(source: ref("media", "m"))) }.map(\.name)
        #expect(names.count == 1)
        #expect(names.allSatisfy { $0.utf8.elementsEqual(decomposed.utf8) }, "\(names.map { Array($0.utf8) })")
        // The file is held by the renamed edge alone: it goes with its one holder, not before.
        _ = try f.store.sweep()
        #expect(f.exists(a))
        try f.delete(ref("media", "m"))
        _ = try f.store.sweep()
        #expect(!f.exists(a))
    }

    @Test("a JSON path field reaches nested references")
    func jsonPathField() throws {
        let f = try Fixture()
        try f.setTemplate("posts", templateEdge("author", field: "$.meta.by", to: "users", []))
        try f.put([(ref("users", "u"), [:]), (ref("posts", "p"), ["meta": ["by": "u"]])])
        #expect(try f.count(EdgeFilter(name: "author", destination: .object(ref("users", "u")))) == 1)
    }

    @Test("template.set re-derives existing objects' edges, persists, and shows in template.get")
    func setTemplateRederives() throws {
        let f = try Fixture()
        try f.put([(ref("users", "u"), [:]), (ref("posts", "p"), ["by": "u"])])
        #expect(try f.count(EdgeFilter(name: "author")) == 0)
        try f.setTemplate("posts", templateEdge("author", field: "by", to: "users", .deleteSourceIfDestinationDeleted))
        #expect(try f.count(EdgeFilter(name: "author")) == 1)
        try f.reopen()
        #expect(try f.store.read { try $0.template(collection: "posts") }.map(\.name) == ["author"])
        try f.delete(ref("users", "u"))
        #expect(try !f.exists(ref("posts", "p")))
    }

    @Test("changing a template drops edges it no longer declares without firing their rules")
    func templateChangeIsQuiet() throws {
        let f = try Fixture()
        try f.setTemplate("owners", templateEdge("kid", field: "kids", to: "kids", .deleteDestinationIfSourceDeleted))
        try f.put([(ref("kids", "k"), [:]), (ref("owners", "o"), ["kids": keys("k")])])
        let r = try f.store.write { try $0.setTemplate(collection: "owners", edges: []) }.report
        #expect(r.deleted.isEmpty)
        #expect(r.edgesRemoved.map(\.reason) == [.edge])
        #expect(try f.exists(ref("kids", "k")))
    }

    @Test("a template's rules are validated when it is set")
    func templateRulesValidated() throws {
        let f = try Fixture()
        #expect(
            expectCode(.invalidRules) {
                try f.setTemplate("c", templateEdge("f", field: "img", to: "file", .notifyIfSourceDeleted))
            } != nil)
        #expect(expectCode(.invalidParams) { try EdgeTemplate(json: ["name": "x", "field": "$.[", "to": "c"]) } != nil)
    }

    @Test("configured templates are applied when the store opens")
    func configuredTemplates() throws {
        let f = try Fixture { c in
            c.templates = [
                "thumbs": [templateEdge("original", field: "orig", to: "originals", .deleteSourceIfDestinationDeleted)]
            ]
        }
        try f.put([(ref("originals", "o"), [:]), (ref("thumbs", "t"), ["orig": "o"])])
        try f.delete(ref("originals", "o"))
        #expect(try !f.exists(ref("thumbs", "t")))
    }

    @Test(
        "invalid paths in a file field fail the put with the path error",
        arguments: [
            ("/etc/passwd", StoreError.Code.pathOutsideRoots), ("relative/x", .invalidPath),
            ("ROOT/../x", .invalidPath),
        ])
    func badFileField(path: String, code: StoreError.Code) throws {
        let f = try Fixture()
        let p = path.replacingOccurrences(of: "ROOT", with: f.root)
        #expect(expectCode(code) { try f.put([(ref("c", "k"), ["file": .string(p)])]) } != nil)
        #expect(try !f.exists(ref("c", "k")))
    }

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
        // Manual edges stay: only a derived edge may be dropped by a put.
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
        // The user replaces the rules of the (orig, t/1, o/1) edge: adding the same triple
        // again replaces its rules.
        try f.addEdge("orig", t, .object(o), .notifyIfDestinationDeleted)
        try f.put([(t, ["orig": "1"])])  // same value again
        #expect(try f.store.read { try $0.edges(EdgeFilter(source: t)) }.map(\.rules) == [.notifyIfDestinationDeleted])
    }

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

    // A file field holding the same path twice (two spellings) derives one edge; dropping one
    // occurrence keeps the file, dropping both queues it once.
    @Test("the same file twice in a field is one edge; it goes only when no occurrence is left")
    func sameFileTwiceInField() throws {
        let f = try Fixture()
        let path = try f.makeFile("dup")
        let o = ref("m", "o")
        try f.put([(o, ["file": [.string(path), .string("file://" + path), 7, nil]])])
        #expect(try f.count(EdgeFilter(source: o)) == 1)
        #expect(try f.put([(o, ["file": [.string(path)]])]).filesQueued.isEmpty)
        #expect(try f.put([(o, ["file": [5]])]).filesQueued == [path])
    }
}
