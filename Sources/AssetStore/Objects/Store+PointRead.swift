// The fast point read behind object.get: one raw read-only connection, prepared statements,
// and the stored value text spliced into the output instead of parsed and printed again.
// Its bytes equal `get(ref)?.json.serialized()` exactly (a test pins this), and both read the
// same rows with the same statements (`objectRowSQL`, `heldFilesSQL`). Every object.get reply
// is printed here: on the daemon's loop through a PointReader, elsewhere through objectJSON.
// A touching read records the access (Store+Access.swift) from the row it prints: one lookup.

import GRDB
import GRDBSQLite
import JSON

/// Decides from an object's owner whether its access may be recorded: throws to refuse.
public typealias AccessCheck = (_ owner: String) throws -> Void

/// The point reads behind object.get and object.touch, over the store's own connections
/// (`Store`) or a snapshot one thread keeps (`PointReader`).
public protocol PointReads {
    /// The object as compact JSON text, or nil. With `check`, an access is recorded first
    /// (if `check` lets it), and the text shows it.
    func objectJSON(_ ref: ObjectRef, touching check: AccessCheck?) throws -> [UInt8]?
    /// Records an access of `ref` in memory (`not_found` if there is none), if `check` lets it.
    func touch(_ ref: ObjectRef, check: AccessCheck) throws
}

extension Store: PointReads {
    /// The object as compact JSON text (keys sorted, as `StoredObject.json` prints), or nil.
    public func objectJSON(_ ref: ObjectRef) throws -> [UInt8]? { try objectJSON(ref, touching: nil) }

    public func objectJSON(_ ref: ObjectRef, touching check: AccessCheck?) throws -> [UInt8]? {
        if check != nil { try checkWritable() } else { try checkOpen() }
        try ref.validate()
        return try queries.with { conn in
            // The pool's connections cap values at the reply limit for clients' clauses.
            try conn.withoutLengthLimit {
                try conn.inReadTransaction { try renderObject(ref, on: conn, touching: check) }
            }
        }
    }

    /// An object's row, as object.get reads it here and `Reads.get` does.
    static let objectRowSQL: StaticString = """
        SELECT id, value, metadata, owner, created, modified, accessed FROM object
        WHERE collection = ? AND key = ?
        """

    /// The files an object holds, one row an edge (a file held through two edges comes
    /// twice): the columns `Reads.fileRecord` takes, then the file's id.
    static let heldFilesSQL: StaticString = """
        SELECT path, size, device, inode, mtime, missing, first_seen, f.id
        FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1
        """

    /// The object's id and owner inside the connection's current read transaction, or nil.
    static func idAndOwner(_ ref: ObjectRef, on conn: QueryConnection) throws -> (Int64, String)? {
        let s = try conn.cached("SELECT id, owner FROM object WHERE collection = ? AND key = ?")
        defer { sqlite3_reset(s) }
        Statement.bindText(s, 1, ref.collection)
        Statement.bindText(s, 2, ref.key)
        switch sqlite3_step(s) {
        case SQLITE_ROW: return (sqlite3_column_int64(s, 0), String(cString: sqlite3_column_text(s, 1)))
        case SQLITE_DONE: return nil
        case let rc: throw conn.failure(rc)
        }
    }

    /// Reads and prints one object inside the connection's current read transaction; its
    /// `accessed` is the later of the stored one and a touch not yet written (Store+Access.swift).
    /// With `check`, records an access first if `check` lets it (the caller checked writability).
    func renderObject(_ ref: ObjectRef, on conn: QueryConnection, touching check: AccessCheck?) throws -> [UInt8]? {
        let o = try conn.cached(Store.objectRowSQL)
        // A statement left mid-rows keeps the read transaction (and its snapshot) open.
        defer { sqlite3_reset(o) }
        Statement.bindText(o, 1, ref.collection)
        Statement.bindText(o, 2, ref.key)
        switch sqlite3_step(o) {
        case SQLITE_ROW: break
        case SQLITE_DONE: return nil
        case let rc: throw conn.failure(rc)
        }
        let id = sqlite3_column_int64(o, 0)
        if let check {
            try check(String(cString: sqlite3_column_text(o, 3)))
            recordAccess(id)
        }
        var out = [UInt8]()
        out.reserveCapacity(256 + Int(sqlite3_column_bytes(o, 1)))
        out.append(UInt8(ascii: "{"))
        Store.key("accessed", first: true, &out)
        if let touched = pendingAccess(id),
            sqlite3_column_type(o, 6) == SQLITE_NULL || touched > sqlite3_column_double(o, 6)
        {
            JSONValue.double(touched).write(to: &out)
        } else {
            Store.number(o, 6, double: true, &out)
        }
        Store.key("collection", &out); JSONValue.writeString(ref.collection, to: &out)
        Store.key("created", &out); Store.number(o, 4, double: true, &out)
        Store.key("files", &out)
        out.append(UInt8(ascii: "["))
        for (i, file) in try Store.heldFiles(id, on: conn).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: file)
        }
        out.append(UInt8(ascii: "]"))
        Store.key("key", &out); JSONValue.writeString(ref.key, to: &out)
        Store.key("metadata", &out); Store.raw(o, 2, &out)
        Store.key("modified", &out); Store.number(o, 5, double: true, &out)
        Store.key("owner", &out); JSONValue.writeString(String(cString: sqlite3_column_text(o, 3)), to: &out)
        Store.key("value", &out); Store.raw(o, 1, &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The files object `id` holds, each printed as `StoredObject.json` prints it, in the byte
    /// order of their paths (SQLite's ORDER BY path), a file held through two edges once.
    /// Joined, not `WHERE id IN (SELECT dst …) ORDER BY path`: that form built two temporary
    /// b-trees for every get, with files or without: 40% of a get's instructions.
    private static func heldFiles(_ id: Int64, on conn: QueryConnection) throws -> [[UInt8]] {
        let f = try conn.cached(heldFilesSQL)
        defer { sqlite3_reset(f) }
        sqlite3_bind_int64(f, 1, id)
        var seen = Set<Int64>()
        var files: [(path: [UInt8], json: [UInt8])] = []
        while true {
            let rc = sqlite3_step(f)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw conn.failure(rc) }
            guard seen.insert(sqlite3_column_int64(f, 7)).inserted else { continue }
            let path = Array(
                UnsafeBufferPointer(start: sqlite3_column_text(f, 0), count: Int(sqlite3_column_bytes(f, 0))))
            var json: [UInt8] = [UInt8(ascii: "{")]
            key("device", first: true, &json); number(f, 2, double: false, &json)
            key("first_seen", &json); number(f, 6, double: true, &json)
            key("inode", &json); number(f, 3, double: false, &json)
            key("missing", &json); json.append(contentsOf: (sqlite3_column_int64(f, 5) != 0 ? "true" : "false").utf8)
            key("mtime", &json); number(f, 4, double: true, &json)
            key("path", &json); JSONValue.writeString(String(decoding: path, as: UTF8.self), to: &json)
            key("size", &json); number(f, 1, double: false, &json)
            json.append(UInt8(ascii: "}"))
            files.append((path, json))
        }
        return files.sorted { $0.path.lexicographicallyPrecedes($1.path) }.map(\.json)
    }

    /// A member name: ours, plain ASCII, so written without looking for escapes.
    private static func key(_ k: StaticString, first: Bool = false, _ out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    private static func raw(_ s: OpaquePointer, _ i: Int32, _ out: inout [UInt8]) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { out.append(contentsOf: "null".utf8); return }
        let n = Int(sqlite3_column_bytes(s, i))
        out.append(contentsOf: UnsafeBufferPointer(start: sqlite3_column_text(s, i), count: n))
    }

    private static func number(_ s: OpaquePointer, _ i: Int32, double: Bool, _ out: inout [UInt8]) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { out.append(contentsOf: "null".utf8); return }
        let v: JSONValue = double ? .double(sqlite3_column_double(s, i)) : .int(sqlite3_column_int64(s, i))
        v.write(to: &out)
    }
}
