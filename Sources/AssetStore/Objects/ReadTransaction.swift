// A read-only transaction: a consistent snapshot, concurrent with the writer.

import GRDB

/// Reads on one snapshot of the store.
public struct ReadTransaction {
    let reads: Reads
    var db: Database { reads.db }

    init(db: Database, roots: ManagedRoots) {
        reads = Reads(db: db, roots: roots)
    }

    /// The object, or nil.
    public func get(_ ref: ObjectRef) throws -> StoredObject? { try reads.get(ref) }

    /// True if the object exists.
    public func exists(_ ref: ObjectRef) throws -> Bool { try reads.objectID(ref) != nil }

    /// Keys of a collection in order, `limit` at a time after `after`; `next` is the key to
    /// pass as `after` for the following page, nil on the last page.
    public func list(
        collection: String, after: String? = nil, limit: Int = 1000
    ) throws -> (keys: [String], next: String?) {
        try reads.list(collection: collection, after: after, limit: limit)
    }

    /// Edges matching the filter, oldest first.
    public func edges(_ filter: EdgeFilter) throws -> [Edge] { try reads.edges(filter) }

    /// Edges matching the filter in id order after the edge `after`, each with its id, read one
    /// at a time until `visit` returns false.
    public func edges(
        _ filter: EdgeFilter, after: Int64 = 0, limit: Int? = nil, _ visit: (Int64, Edge) throws -> Bool
    ) throws {
        try reads.edges(filter, after: after, limit: limit, visit)
    }

    /// The number of edges matching the filter.
    public func edgeCount(_ filter: EdgeFilter) throws -> Int { try reads.edgeCount(filter) }

    /// The registry row of a file and the edges to it, or nil if unregistered.
    public func file(_ path: String) throws -> FileReport? { try reads.file(path) }

    /// The registry row of a file, or nil if unregistered; the edges to it are handed to
    /// `visit` in id order, one at a time, until it returns false, at most `edgeLimit`.
    public func file(
        _ path: String, edgeLimit: Int? = nil, edges visit: (Int64, Edge) throws -> Bool
    ) throws -> FileRecord? {
        try reads.file(path, edgeLimit: edgeLimit, edges: visit)
    }

    /// At least how many edges lead to the registered file at `path`, counted up to `atMost`
    /// from the destination's index alone (0 if it is not registered).
    public func fileEdgeCount(_ path: String, atMost: Int) throws -> Int {
        try reads.fileEdgeCount(path, atMost: atMost)
    }

    /// The owner of the object, or nil if there is none.
    public func owner(of ref: ObjectRef) throws -> String? { try reads.owner(ref) }

    /// Whether objects of `owner`, and objects of other owners, hold the registered file at
    /// this normalised path.
    public func holders(file path: String, owner: String) throws -> (own: Bool, others: Bool) {
        try reads.holders(file: path, owner: owner)
    }

    /// The latest commit number.
    public func lastCommit() throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'commit'") ?? 0
    }

    /// The number of objects.
    public func objectCount() throws -> Int { try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") ?? 0 }

    /// The templates a collection declares (without the built-in one).
    public func template(collection: String) throws -> [EdgeTemplate] {
        try storedTemplates()[UTF8Key(collection)] ?? []
    }

    /// The user indexes.
    public func indexes() throws -> [IndexDefinition] { try storedIndexes() }

    func storedTemplates() throws -> [UTF8Key: [EdgeTemplate]] {
        var out = [UTF8Key: [EdgeTemplate]]()
        for row in try Row.fetchAll(db, sql: "SELECT collection, edges FROM template") {
            let edges = try Reads.json(row[1]).arrayValue ?? []
            out[UTF8Key(row[0])] = try edges.map { e throws(StoreError) in try EdgeTemplate(json: e) }
        }
        return out
    }

    func storedIndexes() throws -> [IndexDefinition] {
        try String.fetchAll(db, sql: "SELECT definition FROM secondary_index ORDER BY name").map {
            try IndexDefinition(json: try Reads.json($0))
        }
    }
}
