// The fast point read behind object.get: one raw read-only connection, prepared statements,
// and the stored value text spliced into the output instead of parsed and printed again.
// Its bytes equal `get(ref)?.json.serialized()` exactly (a test pins this); it reads the rows
// Store.get reads, the files only when the object's row says it holds any. Every object.get
// reply is printed here: on the daemon's loop through a PointReader, straight into the reply
// line, elsewhere through objectJSON. A touching read records the access (Store+Access.swift)
// from the row it prints: one lookup. How the files are read (a bounded few on the loop, or
// all of them, once each, bounded by the reply limit) is Store+FileList.swift.

import GRDB
import GRDBSQLite
import JSON

/// Decides from an object's owner whether its access may be recorded: throws to refuse.
public typealias AccessCheck = (_ owner: String) throws -> Void

/// Whether a point read records an access. A plain enum, not an optional check: a touch with
/// nothing to check then makes no owner String, and no closure is wrapped for the optional.
public enum Touching {
    /// A read only.
    case no
    /// Records the access; nobody's ownership to check.
    case yes
    /// Records the access if the check lets it, from the object's owner.
    case checked(AccessCheck)
}

/// The point reads behind object.get and object.touch, over the store's own connections
/// (`Store`) or a snapshot one thread keeps (`PointReader`).
public protocol PointReads {
    /// Appends the object as compact JSON text to `out` and returns true, or returns false if
    /// there is none. When `touching`, an access is recorded first (if its check lets it), and
    /// the text shows it. Its files are read as `files` says: `.onLoop` throws
    /// ``PointReadOffLoop`` for an object with many file edges, before any access is recorded.
    /// After a throw, `out` may hold part of the text.
    func appendObjectJSON(
        _ ref: ObjectRef, touching: Touching, files: FileReading, to out: inout [UInt8]
    ) throws
        -> Bool
    /// Records an access of `ref` in memory (`not_found` if there is none), if `check` lets it;
    /// with no check, from the (collection, key) index alone (the owner is not read).
    func touch(_ ref: ObjectRef, check: AccessCheck?) throws
}

extension PointReads {
    /// The object as compact JSON text, or nil; see ``appendObjectJSON(_:touching:files:to:)``.
    public func objectJSON(
        _ ref: ObjectRef, touching: Touching = .no, files: FileReading = .whole(replyLimit: .max)
    ) throws -> [UInt8]? {
        var out = [UInt8]()
        return try appendObjectJSON(ref, touching: touching, files: files, to: &out) ? out : nil
    }

    /// ``appendObjectJSON(_:touching:files:to:)`` with every file, whatever the reply's size.
    public func appendObjectJSON(_ ref: ObjectRef, touching: Touching, to out: inout [UInt8]) throws -> Bool {
        try appendObjectJSON(ref, touching: touching, files: .whole(replyLimit: .max), to: &out)
    }
}

extension Store: PointReads {
    public func appendObjectJSON(
        _ ref: ObjectRef, touching: Touching, files: FileReading, to out: inout [UInt8]
    ) throws -> Bool {
        if case .no = touching { try checkOpen() } else { try checkWritable() }
        try ref.validate()
        return try queries.with { conn in
            // The pool's connections cap values at the reply limit for clients' clauses.
            try conn.withoutLengthLimit {
                try conn.inReadTransaction {
                    try renderObject(ref, on: conn, touching: touching, files: files, into: &out)
                }
            }
        }
    }

    /// An object's row, as `Reads.get` reads it.
    static let objectRowSQL: StaticString = """
        SELECT id, value, metadata, owner, created, modified, accessed FROM object
        WHERE collection = ? AND key = ?
        """

    /// The object's id inside the connection's current read transaction, or nil: the
    /// (collection, key) index holds it, so the object's row is not read.
    static func objectID(_ ref: ObjectRef, on conn: QueryConnection) throws -> Int64? {
        let s = try conn.cached("SELECT id FROM object WHERE collection = ? AND key = ?")
        var (collection, key) = (ref.collection, ref.key)
        return try collection.withUTF8 { c in
            try key.withUTF8 { k in
                // Bound in place, as renderObject binds: the reset ends the use of the bytes.
                defer { sqlite3_reset(s) }
                Statement.bindText(s, 1, borrowing: c)
                Statement.bindText(s, 2, borrowing: k)
                switch sqlite3_step(s) {
                case SQLITE_ROW: return sqlite3_column_int64(s, 0)
                case SQLITE_DONE: return nil
                case let rc: throw conn.failure(rc)
                }
            }
        }
    }

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

    /// The object's row as `objectWithFilesSQL` reads it, and how many files it holds (the
    /// built-in index's `files`, kept in the same transaction as its file edges).
    static let objectRowFilesSQL: StaticString = """
        SELECT id, value, metadata, owner, created, modified, accessed, files FROM object
        WHERE collection = ? AND key = ?
        """

    /// Reads and prints one object inside the connection's current read transaction, appended
    /// to `out`; false (nothing appended) if there is none. Its `accessed` is the later of the
    /// stored one and a touch not yet written (Store+Access.swift). When `touching`, records an
    /// access first if its check lets it (the caller checked writability). The object's row says
    /// how many files it holds, and only then are they read: most objects hold none, and a
    /// join with the edge and file tables opened (and allocated) two more cursors every get.
    /// `statement` is `objectRowFilesSQL` prepared on `conn`, if the caller keeps it.
    /// With `byID`, a ref its slots hold is read by id first (ObjectIDSlots.swift), and a ref
    /// found through the index is remembered there. The files are read as `files` says, before
    /// any access is recorded: a read refused for its files records none.
    func renderObject(
        _ ref: ObjectRef, on conn: QueryConnection, statement: OpaquePointer? = nil, byID: RowByID? = nil,
        touching: Touching, files: FileReading, into out: inout [UInt8]
    ) throws -> Bool {
        let s = try statement ?? conn.cached(Store.objectRowFilesSQL)
        var (collection, key) = (ref.collection, ref.key)
        return try collection.withUTF8 { c in
            try key.withUTF8 { k in
                if let byID, let id = byID.slots.id(c, k) {
                    let row = byID.statement
                    sqlite3_bind_int64(row, 1, id)
                    // A statement left mid-rows keeps the read transaction (and its snapshot) open.
                    defer { sqlite3_reset(row) }
                    if try renderRow(row, c, k, on: conn, touching: touching, files: files, into: &out) != nil {
                        return true
                    }
                    // Deleted since: the ref may name a newer object now, which the index finds.
                    byID.slots.remove(c, k)
                }
                // Bound in place: the reset below, before the bytes go, unbinds nothing but
                // ends the statement's use of them (the next use binds again).
                Statement.bindText(s, 1, borrowing: c)
                Statement.bindText(s, 2, borrowing: k)
                defer {
                    sqlite3_reset(s)
                    sqlite3_clear_bindings(s)
                }
                guard let id = try renderRow(s, c, k, on: conn, touching: touching, files: files, into: &out) else {
                    return false
                }
                byID?.slots.set(c, k, id)
                return true
            }
        }
    }

    /// What a point reader keeps to read a row by id: its slots, and `objectRowByIDSQL`
    /// prepared on its connection.
    struct RowByID {
        let slots: ObjectIDSlots
        let statement: OpaquePointer
    }

    /// `objectRowFilesSQL` by the object's id.
    static let objectRowByIDSQL: StaticString = """
        SELECT id, value, metadata, owner, created, modified, accessed, files FROM object WHERE id = ?
        """

    /// renderObject's body, over its statement with the object bound (its ref, or its id); the
    /// object's id, or nil (nothing appended) if there is none. The text around the files
    /// goes through cursors, sized for the worst case of each piece, except large texts,
    /// which are appended straight.
    private func renderRow(
        _ s: OpaquePointer, _ collection: UnsafeBufferPointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>,
        on conn: QueryConnection, touching: Touching, files reading: FileReading, into out: inout [UInt8]
    ) throws -> Int64? {
        switch sqlite3_step(s) {
        case SQLITE_ROW: break
        case SQLITE_DONE: return nil
        case let rc: throw conn.failure(rc)
        }
        let id = sqlite3_column_int64(s, 0)
        // Lengths read once: each column call costs about 60 instructions. Text columns need
        // no conversion, so their lengths hold for the text taken below.
        let lengths = (
            Int(sqlite3_column_bytes(s, 1)), Int(sqlite3_column_bytes(s, 2)), Int(sqlite3_column_bytes(s, 3))
        )
        if case .checked(let check) = touching { try check(String(cString: sqlite3_column_text(s, 3))) }
        // Read before the access is recorded: a read refused for its files (too many for the
        // loop, too large for a reply) records none.
        let files =
            sqlite3_column_int64(s, 7) > 0
            ? try Store.fileList(
                id, sqlite3_column_int64(s, 7), on: conn, reading,
                around: lengths.0 + lengths.1 + lengths.2 + collection.count + key.count) : nil
        let touched: Double?
        switch touching {
        case .no: touched = pendingAccess(id)
        case .yes, .checked: touched = recordAccess(id)
        }
        // The owner is counted once, like the value: its length has no limit, and one that needs
        // escaping grows the buffer as it is written instead of reserving six times its size.
        out.reserveMore(256 + lengths.0 + lengths.1 + lengths.2 + 6 * (key.count + collection.count))
        out.appendText(maximum: 64 + 2 * JSONCursor.doubleMaximum + JSONCursor.stringMaximum(collection.count)) { c in
            c.literal(#"{"accessed":"#)
            if let touched, sqlite3_column_type(s, 6) == SQLITE_NULL || touched > sqlite3_column_double(s, 6) {
                c.double(touched)
            } else {
                Store.number(s, 6, &c)
            }
            c.literal(#","collection":"#)
            c.string(collection)
            c.literal(#","created":"#)
            Store.number(s, 4, &c)
            c.literal(#","files":["#)
        }
        if let files { files.append(to: &out) }
        // Taken after the files' statement ran: nothing points into `s`'s row across other work.
        let (value, metadata, owner) = (
            Store.text(s, 1, lengths.0), Store.text(s, 2, lengths.1), Store.text(s, 3, lengths.2)
        )
        // A NULL column reads as no bytes, and is written null (4 bytes). Large texts go into
        // the reply straight, not through a cursor's room (a copy, and memory, as large; for
        // the owner, up to six times as large).
        let inline = metadata.count + value.count + owner.count <= Store.inlineColumnBytes
        let rest =
            64 + JSONCursor.doubleMaximum + JSONCursor.stringMaximum(key.count) + JSONCursor.stringMaximum(owner.count)
            + max(4, metadata.count) + max(4, value.count)
        out.appendText(maximum: inline ? rest : 32 + JSONCursor.stringMaximum(key.count)) { c in
            c.literal(#"],"key":"#)
            c.string(key)
            c.literal(#","metadata":"#)
            guard inline else { return }
            Store.raw(s, 2, metadata, &c)
            Store.modifiedAndOwner(s, owner, &c)
            Store.raw(s, 1, value, &c)
            c.byte(UInt8(ascii: "}"))
        }
        if !inline {
            Store.raw(s, 2, metadata, &out)
            out.appendText(maximum: 32 + JSONCursor.doubleMaximum) { c in
                c.literal(#","modified":"#)
                Store.number(s, 5, &c)
                c.literal(#","owner":"#)
            }
            JSONValue.writeString(bytes: owner, to: &out)
            Store.literal(#","value":"#, &out)
            Store.raw(s, 1, value, &out)
            out.append(UInt8(ascii: "}"))
        }
        return id
    }

    /// Column `i`'s text as SQLite holds it (valid until the statement moves on); empty for NULL.
    private static func text(_ s: OpaquePointer, _ i: Int32, _ count: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: sqlite3_column_text(s, i), count: count)
    }

    /// Up to this many bytes of an object's `value`, `metadata` and `owner` together go
    /// through a reply's cursor; larger ones are appended straight.
    static let inlineColumnBytes = 16 << 10

    /// The members between `metadata` and `value`, the name `value` included.
    private static func modifiedAndOwner(_ s: OpaquePointer, _ owner: UnsafeBufferPointer<UInt8>, _ c: inout JSONCursor)
    {
        c.literal(#","modified":"#)
        number(s, 5, &c)
        // Stored from a Swift String: valid UTF-8, printed from SQLite's bytes.
        c.literal(#","owner":"#)
        c.string(owner)
        c.literal(#","value":"#)
    }

    /// Column `i`'s `text` as it is (stored JSON text), or null.
    private static func raw(_ s: OpaquePointer, _ i: Int32, _ text: UnsafeBufferPointer<UInt8>, _ c: inout JSONCursor) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { c.literal("null") } else { c.bytes(text) }
    }

    private static func raw(_ s: OpaquePointer, _ i: Int32, _ text: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { literal("null", &out) } else { out.append(contentsOf: text) }
    }

    /// A time column, or null.
    private static func number(_ s: OpaquePointer, _ i: Int32, _ c: inout JSONCursor) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { c.literal("null") } else { c.double(sqlite3_column_double(s, i)) }
    }

    /// Text of ours, plain ASCII, written as it is.
    static func literal(_ text: StaticString, _ out: inout [UInt8]) {
        JSONValue.writeLiteral(text, to: &out)
    }

    static func number(_ s: OpaquePointer, _ i: Int32, double: Bool, _ out: inout [UInt8]) {
        if sqlite3_column_type(s, i) == SQLITE_NULL { literal("null", &out); return }
        if double {
            JSONValue.writeDouble(sqlite3_column_double(s, i), to: &out)
        } else {
            JSONValue.writeInt(sqlite3_column_int64(s, i), to: &out)
        }
    }
}
