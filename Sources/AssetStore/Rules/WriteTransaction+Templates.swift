// The write transaction's collection templates: replacing a collection's templates, and the
// derived edges a value declares under them (checked and probed at put, derived at flush).

import GRDB

extension WriteTransaction {
    /// Replaces a collection's templates and re-derives the edges of its objects. Edges the
    /// new templates no longer declare are removed as with reason `edge`: changing a template
    /// never deletes objects or unlinks files by itself.
    public func setTemplate(collection: String, edges: [EdgeTemplate]) throws {
        try ObjectRef(collection, "x").validate()
        // The name here, not in validate(), which also runs on templates read back from the store.
        for e in edges {
            try e.validate()
            try Edge.validate(name: e.name)
        }
        // An edge name is one edge per destination: two fields under one name could not be
        // told apart when one of them must be nulled.
        var names = Set<String>()
        for e in edges where !names.insert(e.name).inserted {
            throw StoreError(.invalidParams, "template edge name \"\(e.name)\" appears twice in \(collection)")
        }
        if edges.isEmpty {
            try db.execute(sql: "DELETE FROM template WHERE collection = ?", arguments: [collection])
            templates[UTF8Key(collection)] = nil
        } else {
            try db.execute(
                sql: "INSERT OR REPLACE INTO template (collection, edges) VALUES (?, ?)",
                arguments: [collection, JSONValue.array(edges.map(\.json)).serialized()])
            templates[UTF8Key(collection)] = edges
        }
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, value FROM object WHERE collection = ?", arguments: [collection])
        for row in rows {
            let id: Int64 = row[0]
            let desired = try desiredEdges(collection: collection, value: try Reads.json(row[1]))
            if dirty.updateValue(desired, forKey: id) == nil { dirtyOrder.append(id) }
        }
    }

    /// The derived edges a value declares under the collection's templates. Paths are
    /// validated and probed here, so a bad path fails the put that named it.
    func desiredEdges(collection: String, value: JSONValue) throws -> [DesiredEdge] {
        var out = [DesiredEdge]()
        // The files, by their index in `out`, path and root: all charged before any is looked at.
        var files = [(index: Int, path: String, root: String)]()
        // A collection without templates has the built-in one alone: no array built a put.
        let inForce = templates[UTF8Key(collection)].map(EdgeTemplate.effective) ?? EdgeTemplate.builtInOnly
        for t in inForce {
            for reference in t.references(in: value) {
                switch t.to {
                case .file:
                    let (path, root) = try store.roots.accept(reference)
                    files.append((out.count, path, root))
                    out.append(DesiredEdge(template: t, destination: .file(path), fileState: nil))
                case .collection(let c):
                    let ref = ObjectRef(c, reference)
                    try ref.validate()
                    out.append(DesiredEdge(template: t, destination: .object(ref), fileState: nil))
                }
            }
        }
        guard !files.isEmpty else { return out }
        try chargeNamedLooks(files.lazy.map { ($0.path, $0.root) })
        for f in files {
            out[f.index].fileState = try FileProbe.probe(
                path: f.path, root: f.root, roots: store.roots, check: fileReferenceCheck,
                beforeWalk: { () throws(StoreError) in
                    try self.chargeWalk(f.path, below: f.root, refusal: Self.namedFilesLimit)
                })
        }
        return out
    }
}

/// A derived edge an object's value declares.
struct DesiredEdge {
    var template: EdgeTemplate
    var destination: EdgeEnd
    var fileState: FileState?
}
