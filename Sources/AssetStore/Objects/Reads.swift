// Reads shared by read and write transactions. A write transaction passes the ids it has
// deleted but not yet processed, so its own reads do not see them.

import GRDB
import JSON

struct Reads {
    /// The largest page `list` returns.
    static let maximumPage = 100_000

    let db: Database
    let roots: ManagedRoots
    var hidden: Set<Int64> = []

    func objectID(_ ref: ObjectRef) throws -> Int64? {
        let id = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM object WHERE collection = ? AND key = ?"),
            arguments: [ref.collection, ref.key])
        guard let id, !hidden.contains(id) else { return nil }
        return id
    }

    /// The object's owner, or nil if there is none (or this transaction deleted it): the
    /// owner column alone, not the value and files a get reads.
    func owner(_ ref: ObjectRef) throws -> String? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, owner FROM object WHERE collection = ? AND key = ?"),
            arguments: [ref.collection, ref.key])
        guard let row, !hidden.contains(row[0] as Int64) else { return nil }
        return row[1]
    }

    /// Whether objects of `owner`, and objects of other owners, hold the registered file at
    /// this normalised path: one pass over its edges for both.
    func holders(file path: String, owner: String) throws -> (own: Bool, others: Bool) {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT COALESCE(MAX(o.owner = ?2), 0), COALESCE(MAX(o.owner <> ?2), 0)
                    FROM file f JOIN edge e ON e.is_file = 1 AND e.dst = f.id JOIN object o ON o.id = e.src
                    WHERE f.path = ?1
                    """),
            arguments: [path, owner])
        return (row?[0] ?? false, row?[1] ?? false)
    }

    func fileID(_ path: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM file WHERE path = ?"), arguments: [path])
    }

    func get(_ ref: ObjectRef) throws -> StoredObject? {
        try ref.validate()
        // An object this transaction deleted: found by its id alone, not copied (value and
        // metadata) only to be dropped.
        if !hidden.isEmpty, try objectID(ref) == nil { return nil }
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: Store.objectRowSQL.description), arguments: [ref.collection, ref.key])
        else { return nil }
        let id: Int64 = row[0]
        guard !hidden.contains(id) else { return nil }
        // The point read's statement off the loop (Store+FileList.swift): one entry a file, in
        // path byte order, however many edges hold each (a row an edge made 400,000 rows).
        let files = try Row.fetchAll(
            db.cachedStatement(sql: Store.distinctFilesSQL.description), arguments: [id, -1]
        ).map(Reads.fileRecord)
        let metadata: String? = row[2]
        return StoredObject(
            ref: ref, value: try Reads.json(row[1]), metadata: try metadata.map(Reads.json), owner: row[3],
            created: row[4], modified: row[5], accessed: row[6], files: files)
    }

    static func json(_ text: String) throws -> JSONValue {
        do { return try JSONValue.parse(text) } catch {
            throw StoreError(.internalError, "a stored value is not valid JSON: \(error)")
        }
    }

    /// A stored value read in place from its column's bytes.
    static func json(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        do { return try JSONValue.parse(bytes) } catch {
            throw StoreError(.internalError, "a stored value is not valid JSON: \(error)")
        }
    }

    static func fileRecord(_ row: Row) -> FileRecord {
        FileRecord(
            path: row[0], size: row[1], device: row[2], inode: row[3], mtime: row[4], missing: row[5],
            firstSeen: row[6])
    }

    func list(collection: String, after: String?, limit: Int) throws -> (keys: [String], next: String?) {
        guard (1...Reads.maximumPage).contains(limit) else {
            throw StoreError(.invalidParams, "limit must be between 1 and \(Reads.maximumPage)")
        }
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT id, key FROM object WHERE collection = ? AND key > ? ORDER BY key LIMIT ?"),
            arguments: [collection, after ?? "", limit + 1 + hidden.count])
        var keys = [String]()
        var more = false
        for row in rows {
            let id: Int64 = row[0]
            if hidden.contains(id) { continue }
            if keys.count == limit { more = true; break }
            keys.append(row[1])
        }
        return (keys, more ? keys.last : nil)
    }

    /// SQL conditions and arguments for a filter; nil when it can match nothing.
    func edgeCondition(_ filter: EdgeFilter) throws -> (String, StatementArguments)? {
        var parts = ["1"]
        var args = StatementArguments()
        if let name = filter.name {
            parts.append("e.name = ?")
            args += [name]
        }
        if let source = filter.source {
            guard let id = try objectID(source) else { return nil }
            parts.append("e.src = ?")
            args += [id]
        }
        switch filter.destination {
        case .object(let ref)?:
            guard let id = try objectID(ref) else { return nil }
            parts.append("e.is_file = 0 AND e.dst = ?")
            args += [id]
        case .file(let reference)?:
            guard let id = try fileID(try ManagedRoots.normalise(reference)) else { return nil }
            parts.append("e.is_file = 1 AND e.dst = ?")
            args += [id]
        case nil: break
        }
        if !hidden.isEmpty {
            let ids = hidden.map(String.init).joined(separator: ",")
            parts.append("e.src NOT IN (\(ids)) AND NOT (e.is_file = 0 AND e.dst IN (\(ids)))")
        }
        return (parts.joined(separator: " AND "), args)
    }

    func edges(_ filter: EdgeFilter) throws -> [Edge] {
        var out = [Edge]()
        try edges(filter) { _, edge in
            out.append(edge)
            return true
        }
        return out
    }

    /// The edges matching the filter in id order, after the edge with id `after`, one row at a
    /// time: a reader that stops early (`visit` returns false) has read no further, so a store
    /// of millions of edges never makes them all. With `limit`, at most that many: a filter
    /// read through an index (a source, a destination) is sorted by id, and SQLite then keeps
    /// only the first `limit` in its sorter instead of every match.
    func edges(
        _ filter: EdgeFilter, after: Int64 = 0, limit: Int? = nil, _ visit: (Int64, Edge) throws -> Bool
    ) throws {
        guard let (cond, args) = try edgeCondition(filter) else { return }
        let rows = try Row.fetchCursor(
            db, sql: EdgeRow.select + " WHERE " + cond + " AND e.id > ? ORDER BY e.id LIMIT ?",
            arguments: args + [after, limit ?? -1])
        while let row = try rows.next() {
            let edge = EdgeRow(row: row)
            guard try visit(edge.id, edge.edge) else { return }
        }
    }

    func edgeCount(_ filter: EdgeFilter) throws -> Int {
        guard let (cond, args) = try edgeCondition(filter) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM edge e WHERE " + cond, arguments: args) ?? 0
    }

    func file(_ reference: String) throws -> FileReport? {
        var edges = [Edge]()
        let record = try file(reference) { _, edge in
            edges.append(edge)
            return true
        }
        return record.map { FileReport(record: $0, edges: edges) }
    }

    /// The registry row of the file at `reference`, or nil; its edges are handed to `visit`
    /// in id order, one at a time, until it returns false, at most `limit` of them: a reader
    /// that stops early (file.get at the reply limit) has read no further.
    func file(
        _ reference: String, edgeLimit limit: Int? = nil, edges visit: (Int64, Edge) throws -> Bool
    ) throws -> FileRecord? {
        let path = try ManagedRoots.normalise(reference)
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT path, size, device, inode, mtime, missing, first_seen, id FROM file WHERE path = ?",
                arguments: [path])
        else { return nil }
        let id: Int64 = row[7]
        // The first `limit` ids from the destination's index alone (SQLite's sort keeps no more
        // than that), then their rows in that order: an `ORDER BY e.id LIMIT` over the whole
        // select read every edge's source and file first.
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: EdgeRow.select + " " + Reads.fileEdgesCondition),
            arguments: [id, limit.map { $0 + hidden.count } ?? -1])
        while let row = try rows.next() {
            let edge = EdgeRow(row: row)
            if hidden.contains(edge.src) { continue }
            guard try visit(edge.id, edge.edge) else { break }
        }
        return Reads.fileRecord(row)
    }

    /// At least how many edges to the file at `reference` are visible, counted up to `atMost`
    /// from the destination's index alone (0 if it is not registered).
    func fileEdgeCount(_ reference: String, atMost: Int) throws -> Int {
        let path = try ManagedRoots.normalise(reference)
        let sql = """
            SELECT COUNT(*) FROM (SELECT 1 FROM edge
                WHERE is_file = 1 AND dst = (SELECT id FROM file WHERE path = ?) LIMIT ?)
            """
        let all = try Int.fetchOne(db, sql: sql, arguments: [path, atMost + hidden.count]) ?? 0
        return max(0, all - hidden.count)
    }

    /// The edges to file `?1`, the first `?2` (-1: all) in id order.
    static let fileEdgesCondition = """
        WHERE e.id IN (SELECT id FROM edge WHERE is_file = 1 AND dst = ?1 ORDER BY id LIMIT ?2) ORDER BY e.id
        """
}
