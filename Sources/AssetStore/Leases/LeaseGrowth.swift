// What a write adds to what a uid's leases keep from eviction, told before the write goes to
// the writer: a put's object and the files its value names, an edge's source and file. Its
// count (LeasedBytes.swift) runs in a read transaction, off the writer, with the write's files
// in place of the object's current ones; the files are looked at as a put probes them.

import JSON

/// The objects and files a write (a put, an `edge.add`, the ops of a `transact`) gives what
/// leases keep. Counted whole: a transact's puts and edges all as if they took effect.
public struct LeaseGrowth: Sendable, Equatable {
    /// Objects holding, after the write, the files it adds (a put's object, an edge's source).
    public var objects: [ObjectRef] = []
    /// Objects whose derived file edges the write replaces (a put's object): their files are
    /// counted from `files`, their manual edges (`edge.add`) as they are.
    public var replaced: [ObjectRef] = []
    /// The files the write gives them, normalised.
    public var files: [String] = []

    public init(objects: [ObjectRef] = [], replaced: [ObjectRef] = [], files: [String] = []) {
        (self.objects, self.replaced, self.files) = (objects, replaced, files)
    }

    /// This write's growth and `other`'s, as one write's.
    public func adding(_ other: LeaseGrowth) -> LeaseGrowth {
        LeaseGrowth(objects: objects + other.objects, replaced: replaced + other.replaced, files: files + other.files)
    }
}

extension Store {
    /// The normalised paths of the files a put of `value` in `collection` would hold, under the
    /// templates in force: references outside the roots are left out (the put refuses them).
    public func fileReferences(collection: String, value: JSONValue) -> [String] {
        let templates = state.withLock { $0.templates[UTF8Key(collection)] }
        let inForce = templates.map(EdgeTemplate.effective) ?? EdgeTemplate.builtInOnly
        var paths = [String]()
        for t in inForce where t.to == .file {
            for reference in t.references(in: value) {
                if let accepted = try? roots.accept(reference) { paths.append(accepted.path) }
            }
        }
        return paths
    }

    /// Each of `paths` (normalised) with its size as a put's probe for `check` sees it now: 0
    /// if missing, or if it cannot be looked at or `check` refuses it (the write then fails on
    /// it, before any count is told): a refusal must not tell a file's size the caller may not
    /// see.
    func probedSizes(_ paths: [String], check: FileReferenceCheck?) -> [(path: String, size: Int64)] {
        var seen = Set<PathKey>()
        return paths.compactMap { path -> (path: String, size: Int64)? in
            guard seen.insert(PathKey(path: path)).inserted else { return nil }
            guard let root = try? roots.accept(path).root,
                let state = try? FileProbe.probe(path: path, root: root, roots: roots, check: check)
            else { return (path, 0) }
            return (path, state.size)
        }
    }
}
