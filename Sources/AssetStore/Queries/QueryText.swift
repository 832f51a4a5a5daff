// Turns a client's clause and JSON parameters into SQL text and bindings: `?` outside
// literals, identifiers and comments is a parameter; an array parameter expands to `?,?,…`,
// an empty one to NULL (so `IN (?)` matches nothing).

import GRDB
import GRDBSQLite
import Glibc
import JSON

enum QueryText {
    static func expand(_ clause: String, _ parameters: [JSONValue]) throws(StoreError) -> (String, [JSONValue]) {
        // Only an array parameter changes the text; without one the clause is used as it is,
        // once checked (building a copy of it was a fiftieth of a top-100 query).
        let rewrites = parameters.contains { if case .array = $0 { true } else { false } }
        var clause = clause
        let marks = try clause.withUTF8 { parameterMarks($0, parameters, keeping: rewrites) }.get()
        guard rewrites else { return (clause, parameters) }
        var out = [UInt8]()
        var args = [JSONValue]()
        clause.withUTF8 { text in
            out.reserveCapacity(text.count + 8)
            var from = 0
            for (at, p) in zip(marks, parameters) {
                out.append(contentsOf: text[from..<at])
                from = at + 1
                guard case .array(let items) = p else {
                    out.append(UInt8(ascii: "?"))
                    args.append(p)
                    continue
                }
                if items.isEmpty { out.append(contentsOf: "NULL".utf8) }
                for (n, item) in items.enumerated() {
                    if n > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(UInt8(ascii: "?"))
                    args.append(item)
                }
            }
            out.append(contentsOf: text[from...])
        }
        return (String(decoding: out, as: UTF8.self), args)
    }

    /// Checks the clause's `?` against `parameters` and returns their offsets (only when
    /// `keeping`). Over the UTF-8 bytes: every delimiter is ASCII, and a multi-byte
    /// character's bytes are all ≥ 0x80, so none is mistaken for one (by scalars it was a
    /// tenth of a query).
    private static func parameterMarks(
        _ text: UnsafeBufferPointer<UInt8>, _ parameters: [JSONValue], keeping: Bool
    ) -> Result<[Int], StoreError> {
        var marks = [Int]()
        var next = 0
        var i = 0
        func skip(past end: StaticString) {
            let e = UnsafeBufferPointer(start: end.utf8Start, count: end.utf8CodeUnitCount)
            while i < text.count {
                if text[i...].starts(with: e) {
                    i += e.count
                    return
                }
                i += 1
            }
        }
        while i < text.count {
            let c = text[i]
            i += 1
            switch c {
            case UInt8(ascii: "'"): skip(past: "'")
            case UInt8(ascii: "\""): skip(past: "\"")
            case UInt8(ascii: "`"): skip(past: "`")
            case UInt8(ascii: "["): skip(past: "]")
            case UInt8(ascii: "-") where i < text.count && text[i] == UInt8(ascii: "-"): skip(past: "\n")
            case UInt8(ascii: "/") where i < text.count && text[i] == UInt8(ascii: "*"):
                i += 1
                skip(past: "*/")
            case UInt8(ascii: "?"):
                // Of ASCII only the digits are numeric: looking a byte up as a scalar's
                // property was half of this scan.
                if i < text.count,
                    text[i] < 0x80
                        ? (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[i])
                        : String(decoding: text[i..<min(i + 4, text.count)], as: UTF8.self)
                            .unicodeScalars.first?.properties.numericType != nil
                {
                    return .failure(StoreError(.queryRejected, "numbered parameters are not supported; use ?"))
                }
                guard next < parameters.count else {
                    return .failure(
                        StoreError(.invalidParams, "the clause has more ? than parameters (\(parameters.count))"))
                }
                do throws(StoreError) {
                    if case .array(let items) = parameters[next] {
                        for item in items { try checkScalar(item) }
                    } else {
                        try checkScalar(parameters[next])
                    }
                } catch {
                    return .failure(error)
                }
                if keeping { marks.append(i - 1) }
                next += 1
            default:
                break
            }
        }
        guard next == parameters.count else {
            return .failure(StoreError(.invalidParams, "\(parameters.count) parameters given for \(next) ?"))
        }
        return .success(marks)
    }

    private static func checkScalar(_ v: JSONValue) throws(StoreError) {
        switch v {
        case .array, .object: throw StoreError(.invalidParams, "parameters must be JSON scalars or arrays of them")
        default: return
        }
    }

    static func bind(_ stmt: OpaquePointer, _ i: Int32, _ v: JSONValue) throws {
        switch v {
        case .null: sqlite3_bind_null(stmt, i)
        case .bool(let b): sqlite3_bind_int64(stmt, i, b ? 1 : 0)
        case .int(let n): sqlite3_bind_int64(stmt, i, n)
        case .double(let d): sqlite3_bind_double(stmt, i, d)
        case .string(let s): Statement.bindText(stmt, i, s)  // NUL bytes included
        case .array, .object: throw StoreError(.invalidParams, "parameters must be JSON scalars")
        }
    }

    /// The column's text, all its bytes (a NUL inside included; `String(cString:)` stopped
    /// there, and measured its length first). Read through the column's value: each
    /// `sqlite3_column_` call pays the statement's checks again, a `sqlite3_value_` call does
    /// not (query connections are NOMUTEX, so the unprotected value is safe on its thread).
    /// `inline` is `inlineLayoutHolds`, read once by the caller (each read of a static pays
    /// its once-check).
    static func text(_ stmt: OpaquePointer, _ i: Int32, inline: Bool) -> String {
        let v = sqlite3_column_value(stmt, i)
        guard let p = sqlite3_value_text(v) else { return "" }
        let bytes = UnsafeBufferPointer(start: p, count: Int(sqlite3_value_bytes(v)))
        if inline, let s = smallASCII(bytes) { return s }
        return checked(bytes)
    }

    /// The column's text as `text` reads it; a long one is `previous` when its bytes are the
    /// same, else becomes the new `previous`: comparing costs a fraction of checking and
    /// copying the bytes into a new string. A short ASCII one is made anew, which costs less
    /// than comparing.
    static func text(_ stmt: OpaquePointer, _ i: Int32, reusing previous: inout String, inline: Bool) -> String {
        let v = sqlite3_column_value(stmt, i)
        guard let p = sqlite3_value_text(v) else { return "" }
        let bytes = UnsafeBufferPointer(start: p, count: Int(sqlite3_value_bytes(v)))
        if inline, let s = smallASCII(bytes) { return s }
        let same =
            previous.utf8.count == bytes.count
            && previous.withUTF8 { old in memcmp(old.baseAddress!, p, old.count) == 0 }
        if !same { previous = checked(bytes) }
        return previous
    }

    /// The string of `bytes`, ill-formed UTF-8 repaired as `String(decoding:)` repairs it. Up
    /// to 15 bytes a String is held inline, and `init(unsafeUninitializedCapacity:)` then
    /// checks them with a mask over its two words instead of a scan (about 80 instructions
    /// less a key; it repairs the same way, as documented).
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if inlineLayoutHolds, let s = smallASCII(bytes) { return s }
        return checked(bytes)
    }

    /// `string` without the inline path: for callers that tried `smallASCII` already (or
    /// must not).
    static func checked(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard bytes.count <= 15, let base = bytes.baseAddress else { return String(decoding: bytes, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: bytes.count) { buffer in
            buffer.baseAddress!.update(from: base, count: bytes.count)
            return bytes.count
        }
    }

    /// Up to 15 ASCII bytes as an inline String made from its two words directly: the bytes,
    /// zero-padded, and the top byte's flags (immortal, ASCII, small) and count. Even the
    /// inline initializer's call, closure and check were about 115 instructions a key, a
    /// fifth of a top-100 row's own work; this is about 15. nil for anything else. Only
    /// where `inlineLayoutHolds`.
    @inline(__always)
    static func smallASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        assert(inlineLayoutHolds, "smallASCII where this standard library lays strings out otherwise")
        guard var words = smallASCIIWords(bytes) else { return nil }
        // Moved out, not cast: a cast's copy would be retained (a call, though an inline
        // string has nothing to count).
        return withUnsafeMutablePointer(to: &words) { $0.withMemoryRebound(to: String.self, capacity: 1) { $0.move() } }
    }

    /// The two words `smallASCII` makes a String of, or nil. Kept apart so the layout check
    /// can compare them without making a String of words that may not be one.
    @inline(__always)
    static func smallASCIIWords(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        let n = bytes.count
        guard n <= 15, let base = bytes.baseAddress else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: n) }
        guard (words.0 | words.1) & 0x8080_8080_8080_8080 == 0 else { return nil }
        words.1 |= UInt64(0xE0 | n) << 56
        return words
    }

    /// Whether `smallASCII` makes what this standard library makes: checked once against
    /// strings decoded at run time, from bytes the optimizer cannot see (a literal's bits may
    /// be folded at compile time), at lengths in either word, at both ends and with a NUL.
    static let inlineLayoutHolds: Bool = {
        guard MemoryLayout<String>.size == 16, MemoryLayout<(UInt64, UInt64)>.size == 16 else { return false }
        for (n, nul) in [(0, -1), (1, -1), (7, -1), (8, -1), (9, 8), (15, -1), (15, 3)] {
            let bytes = opaqueBytes((0..<n).map { $0 == nul ? 0 : UInt8(0x61 + $0) })
            let decoded = String(decoding: bytes, as: UTF8.self)
            let made = bytes.withUnsafeBufferPointer { smallASCIIWords($0) }
            // Only a decoded String's own bits are read, which is safe whatever the layout.
            guard let made, made == unsafeBitCast(decoded, to: (UInt64, UInt64).self) else { return false }
        }
        return true
    }()

    /// `bytes`, hidden from the optimizer.
    @inline(never) @_optimize(none)
    static func opaqueBytes(_ bytes: [UInt8]) -> [UInt8] { bytes }

    static func value(_ stmt: OpaquePointer, _ i: Int32) -> JSONValue {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(stmt, i))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(stmt, i))
        case SQLITE_TEXT: return .string(text(stmt, i, inline: inlineLayoutHolds))
        default: return .null
        }
    }

    /// Adds what the row `stmt` is on takes as text (a little under its JSON) to `bytes`, and
    /// throws `reply_too_large` once that passes `limit`.
    static func count(_ stmt: OpaquePointer, _ columns: Int32, _ bytes: inout Int, limit: Int) throws {
        // Text and blobs by their length; asking a number's would convert it to text.
        for i in 0..<columns {
            let type = sqlite3_column_type(stmt, i)
            bytes += type == SQLITE_TEXT || type == SQLITE_BLOB ? Int(sqlite3_column_bytes(stmt, i)) : 8
        }
        if bytes > limit { throw StoreError.replyTooLarge(limit) }
    }

    /// Throws `reply_too_large` if `bytes` and the text of the row `stmt` is on pass `limit`:
    /// a row's JSON takes at least its text's bytes (a blob is written as null).
    static func countText(_ stmt: OpaquePointer, _ columns: Int32, _ bytes: Int, limit: Int) throws {
        var text = 0
        for i in 0..<columns where sqlite3_column_type(stmt, i) == SQLITE_TEXT {
            text += Int(sqlite3_column_bytes(stmt, i))
        }
        if bytes + text > limit { throw StoreError.replyTooLarge(limit) }
    }

    /// SQLite's message for the last error when it names only a column or function; a
    /// syntax error's message quotes SQL text (ours, too), so it is replaced.
    static func describe(_ db: OpaquePointer) -> String {
        let message = String(cString: sqlite3_errmsg(db))
        let safe = [
            "no such column: ", "no such function: ", "wrong number of arguments to function ",
            "misuse of aggregate", "ambiguous column name: ", "string or blob too big", CheckedText.refusal,
            "LIKE or GLOB pattern too complex", "ESCAPE expression must be a single character",
        ]
        return safe.contains(where: message.hasPrefix) ? message : "syntax error in the clause or function"
    }

    /// Whether `sql` joins with USING or NATURAL: the words as keywords, outside literals,
    /// quoted names and comments. SQLite reads the columns such a join compares without asking
    /// the authorizer, so that a clause could read any table through one.
    static func joinsByName(_ sql: String) -> Bool {
        SQLWords.contains(in: sql) { w, _ in SQLWords.isKeyword(w, "using") || SQLWords.isKeyword(w, "natural") }
    }

    /// Whether `sql` is a compound SELECT: UNION, INTERSECT or EXCEPT outside parentheses. A
    /// query's rows must be rows of its index; a compound's second SELECT could make up any
    /// row (inside a subquery it only filters).
    static func isCompound(_ sql: String) -> Bool {
        SQLWords.contains(in: sql) { w, depth in
            depth <= 0
                && (SQLWords.isKeyword(w, "union") || SQLWords.isKeyword(w, "intersect")
                    || SQLWords.isKeyword(w, "except"))
        }
    }

    /// True for an empty clause or one that starts with WHERE.
    static func isWhereClause(_ clause: String) -> Bool {
        let t = clause.drop(while: \.isWhitespace)
        guard !t.isEmpty else { return true }
        guard t.count > 5, t.prefix(5).uppercased() == "WHERE" else { return false }
        let next = t[t.index(t.startIndex, offsetBy: 5)]
        return next.isWhitespace || next == "("
    }
}
