// The library's point read: one object with its files in one statement on a query
// connection, so the statement is its own snapshot and no BEGIN and COMMIT are run around it,
// and its columns are read in place instead of through GRDB's rows.

import GRDB
import JSON

extension Store {
    /// The object with its files, read on a snapshot of its own, or nil: what
    /// `read { try $0.get(ref) }` returns, except that `accessed` counts a touch not yet
    /// written, as object.get's does (Store+Access.swift).
    public func get(_ ref: ObjectRef) throws -> StoredObject? {
        try checkOpen()
        try ref.validate()
        var id: Int64 = 0
        let found = try queries.with { conn in
            // The pool's connections cap values at the reply limit for clients' clauses.
            try conn.withoutLengthLimit { () throws -> StoredObject? in
                var object: StoredObject?
                try conn.rows(Store.objectWithFilesSQL) { s in
                    Statement.bindText(s, 1, ref.collection)
                    Statement.bindText(s, 2, ref.key)
                } _: { row in
                    if object == nil {
                        id = row.int64(0)
                        object = StoredObject(
                            ref: ref, value: try Reads.json(row.bytes(1)),
                            metadata: row.isNull(2) ? JSONValue?.none : try Reads.json(row.bytes(2)),
                            owner: row.text(3) ?? "",
                            created: row.double(4), modified: row.double(5), accessed: row.double(6), files: [])
                    }
                    guard !row.isNull(7) else { return }  // no file edge (LEFT JOIN)
                    object?.files.append(
                        FileRecord(
                            path: row.text(7) ?? "", size: row.int64(8), device: row.isNull(9) ? nil : row.int64(9),
                            inode: row.isNull(10) ? nil : row.int64(10), mtime: row.isNull(11) ? nil : row.double(11),
                            missing: row.int64(12) != 0, firstSeen: row.double(13)))
                }
                return object
            }
        }
        guard var object = found else { return nil }
        if object.files.count > 1 {
            // Path byte order, as Reads.get; a file held through two edges came twice, side by
            // side once sorted (paths are unique in the registry).
            object.files.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
            var unique = [FileRecord]()
            unique.reserveCapacity(object.files.count)
            for f in object.files where unique.last?.path != f.path { unique.append(f) }
            object.files = unique
        }
        if let touched = pendingAccess(id), touched > object.accessed { object.accessed = touched }
        return object
    }

    /// An object's row and its files, one row a file edge (the object's columns repeated), or
    /// one row with NULL file columns if it holds none. Not ordered: sorting the few files in
    /// Swift spares SQLite a temporary b-tree on every get.
    static let objectWithFilesSQL: StaticString = """
        SELECT o.id, o.value, o.metadata, o.owner, o.created, o.modified, o.accessed,
            f.path, f.size, f.device, f.inode, f.mtime, f.missing, f.first_seen
        FROM object o
        LEFT JOIN edge e ON e.src = o.id AND e.is_file = 1
        LEFT JOIN file f ON f.id = e.dst
        WHERE o.collection = ? AND o.key = ?
        """
}
