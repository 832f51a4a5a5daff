// The fast point read behind object.get: one raw read-only connection, prepared statements,
// and the stored value text spliced into the output instead of parsed and printed again.
// Its bytes equal `get(ref)?.json.serialized()` exactly (a test pins this).

import GRDB
import GRDBSQLite

extension Store {
    /// The object as compact JSON text (keys sorted, as `StoredObject.json` prints), or nil.
    public func objectJSON(_ ref: ObjectRef) throws -> [UInt8]? {
        try checkOpen()
        try ref.validate()
        return try queries.with { conn in
            try conn.inReadTransaction { try Store.renderObject(ref, on: conn) }
        }
    }

    /// Reads and prints one object inside the connection's current read transaction.
    static func renderObject(_ ref: ObjectRef, on conn: QueryConnection) throws -> [UInt8]? {
        let o = try conn.cached("""
            SELECT id, value, metadata, owner, created, modified, accessed FROM object
            WHERE collection = ? AND key = ?
            """)
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
        var out = [UInt8]()
        out.reserveCapacity(256 + Int(sqlite3_column_bytes(o, 1)))
        func key(_ k: String, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(k, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func raw(_ s: OpaquePointer, _ i: Int32) {
            if sqlite3_column_type(s, i) == SQLITE_NULL { out.append(contentsOf: "null".utf8); return }
            let n = Int(sqlite3_column_bytes(s, i))
            out.append(contentsOf: UnsafeBufferPointer(start: sqlite3_column_text(s, i), count: n))
        }
        func number(_ s: OpaquePointer, _ i: Int32, double: Bool) {
            if sqlite3_column_type(s, i) == SQLITE_NULL { out.append(contentsOf: "null".utf8); return }
            let v: JSONValue = double ? .double(sqlite3_column_double(s, i)) : .int(sqlite3_column_int64(s, i))
            v.write(to: &out)
        }
        out.append(UInt8(ascii: "{"))
        key("accessed", first: true); number(o, 6, double: true)
        key("collection"); JSONValue.writeString(ref.collection, to: &out)
        key("created"); number(o, 4, double: true)
        key("files")
        out.append(UInt8(ascii: "["))
        let f = try conn.cached("""
            SELECT path, size, device, inode, mtime, missing, first_seen FROM file
            WHERE id IN (SELECT dst FROM edge WHERE src = ? AND is_file = 1) ORDER BY path
            """)
        defer { sqlite3_reset(f) }
        sqlite3_bind_int64(f, 1, id)
        var firstFile = true
        while true {
            let rc = sqlite3_step(f)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw conn.failure(rc) }
            if !firstFile { out.append(UInt8(ascii: ",")) }
            firstFile = false
            out.append(UInt8(ascii: "{"))
            key("device", first: true); number(f, 2, double: false)
            key("first_seen"); number(f, 6, double: true)
            key("inode"); number(f, 3, double: false)
            key("missing"); out.append(contentsOf: (sqlite3_column_int64(f, 5) != 0 ? "true" : "false").utf8)
            key("mtime"); number(f, 4, double: true)
            key("path"); JSONValue.writeString(String(cString: sqlite3_column_text(f, 0)), to: &out)
            key("size"); number(f, 1, double: false)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        key("key"); JSONValue.writeString(ref.key, to: &out)
        key("metadata"); raw(o, 2)
        key("modified"); number(o, 5, double: true)
        key("owner"); JSONValue.writeString(String(cString: sqlite3_column_text(o, 3)), to: &out)
        key("value"); raw(o, 1)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
