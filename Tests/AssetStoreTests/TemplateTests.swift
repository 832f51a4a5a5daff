// Collection templates (SPEC §3): derived edges from fields and JSON paths, one-to-many,
// the built-in `file` template and its override, per-collection scope, persistence.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct TemplateTests {
    @Test("the built-in file field derives owning file edges from a path or an array of paths")
    func builtInFileField() throws {
        let f = try Fixture()
        let a = try f.makeFile("a"), b = try f.makeFile("b")
        try f.put([(ref("x", "one"), ["file": .string(a)]), (ref("y", "many"), ["file": [.string(a), .string("file://" + b)]])])
        let edges = try f.store.read { try $0.edges(EdgeFilter(name: "file")) }
        #expect(edges.count == 3)
        #expect(edges.allSatisfy { $0.rules == .deleteDestinationIfAllSourcesDeleted && $0.kind == .derived(field: "file") })
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
        try f.setTemplate("thumbs", templateEdge("original", field: "orig", to: "originals", .deleteSourceIfDestinationDeleted))
        try f.put([(ref("originals", "o"), [:]), (ref("thumbs", "t"), ["orig": "o"]), (ref("other", "t"), ["orig": "o"])])
        #expect(try f.count(EdgeFilter(name: "original")) == 1)
        let r = try f.delete(ref("originals", "o"))
        #expect(r.deletedRefs == [ref("originals", "o"), ref("thumbs", "t")])
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
        #expect(expectCode(.invalidRules) {
            try f.setTemplate("c", templateEdge("f", field: "img", to: "file", .notifyIfSourceDeleted))
        } != nil)
        #expect(expectCode(.invalidParams) { try EdgeTemplate(json: ["name": "x", "field": "$.[", "to": "c"]) } != nil)
    }

    @Test("configured templates are applied when the store opens")
    func configuredTemplates() throws {
        let f = try Fixture { c in
            c.templates = ["thumbs": [templateEdge("original", field: "orig", to: "originals", .deleteSourceIfDestinationDeleted)]]
        }
        try f.put([(ref("originals", "o"), [:]), (ref("thumbs", "t"), ["orig": "o"])])
        try f.delete(ref("originals", "o"))
        #expect(try !f.exists(ref("thumbs", "t")))
    }

    @Test("invalid paths in a file field fail the put with the path error", arguments: [
        ("/etc/passwd", StoreError.Code.pathOutsideRoots), ("relative/x", .invalidPath), ("ROOT/../x", .invalidPath),
    ])
    func badFileField(path: String, code: StoreError.Code) throws {
        let f = try Fixture()
        let p = path.replacingOccurrences(of: "ROOT", with: f.root)
        #expect(expectCode(code) { try f.put([(ref("c", "k"), ["file": .string(p)])]) } != nil)
        #expect(try !f.exists(ref("c", "k")))
    }
}
