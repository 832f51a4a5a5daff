// Turns a client's clause and JSON parameters into SQL text and bindings: `?` outside
// literals, identifiers and comments is a parameter; an array parameter expands to `?,?,…`,
// an empty one to NULL (so `IN (?)` matches nothing).

import GRDB
import GRDBSQLite
import JSON

enum QueryText {
    static func expand(_ clause: String, _ parameters: [JSONValue]) throws(StoreError) -> (String, [JSONValue]) {
        // Over the UTF-8 bytes: every delimiter is ASCII, and a multi-byte character's bytes
        // are all ≥ 0x80, so none is mistaken for one (by scalars it was a tenth of a query).
        let text = Array(clause.utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.count + 8)
        var args = [JSONValue]()
        var next = 0
        var i = 0
        func copyUntil(_ e: [UInt8]) {
            while i < text.count {
                if text[i...].starts(with: e) {
                    out.append(contentsOf: e)
                    i += e.count
                    return
                }
                out.append(text[i])
                i += 1
            }
        }
        while i < text.count {
            let c = text[i]
            switch c {
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["):
                out.append(c)
                i += 1
                copyUntil([c == UInt8(ascii: "[") ? UInt8(ascii: "]") : c])
            case UInt8(ascii: "-") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "-"):
                copyUntil(Array("\n".utf8))
            case UInt8(ascii: "/") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "*"):
                out.append(contentsOf: [c, text[i + 1]])
                i += 2
                copyUntil(Array("*/".utf8))
            case UInt8(ascii: "?"):
                i += 1
                if i < text.count,
                    String(decoding: text[i..<min(i + 4, text.count)], as: UTF8.self)
                        .unicodeScalars.first?.properties.numericType != nil
                {
                    throw StoreError(.queryRejected, "numbered parameters are not supported; use ?")
                }
                guard next < parameters.count else {
                    throw StoreError(.invalidParams, "the clause has more ? than parameters (\(parameters.count))")
                }
                let p = parameters[next]
                next += 1
                switch p {
                case .array(let items):
                    if items.isEmpty {
                        out.append(contentsOf: "NULL".utf8)
                    } else {
                        for (n, item) in items.enumerated() {
                            try checkScalar(item)
                            if n > 0 { out.append(UInt8(ascii: ",")) }
                            out.append(UInt8(ascii: "?"))
                            args.append(item)
                        }
                    }
                default:
                    try checkScalar(p)
                    out.append(UInt8(ascii: "?"))
                    args.append(p)
                }
            default:
                out.append(c)
                i += 1
            }
        }
        guard next == parameters.count else {
            throw StoreError(.invalidParams, "\(parameters.count) parameters given for \(next) ?")
        }
        return (String(decoding: out, as: UTF8.self), args)
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
    /// there, and measured its length first).
    static func text(_ stmt: OpaquePointer, _ i: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, i) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, i))), as: UTF8.self)
    }

    static func value(_ stmt: OpaquePointer, _ i: Int32) -> JSONValue {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(stmt, i))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(stmt, i))
        case SQLITE_TEXT: return .string(text(stmt, i))
        default: return .null
        }
    }

    /// SQLite's message for the last error when it names only a column or function; a
    /// syntax error's message quotes SQL text (ours, too), so it is replaced.
    static func describe(_ db: OpaquePointer) -> String {
        let message = String(cString: sqlite3_errmsg(db))
        let safe = [
            "no such column: ", "no such function: ", "wrong number of arguments to function ",
            "misuse of aggregate", "ambiguous column name: ", "string or blob too big",
        ]
        return safe.contains(where: message.hasPrefix) ? message : "syntax error in the clause or function"
    }

    /// Whether `sql` joins with USING or NATURAL: the words as keywords, outside literals,
    /// quoted names and comments. SQLite reads the columns such a join compares without asking
    /// the authorizer, so that a clause could read any table through one.
    static func joinsByName(_ sql: String) -> Bool {
        var sql = sql
        return sql.withUTF8 { joinsByName($0) }
    }

    private static func joinsByName(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        func isNameByte(_ c: UInt8) -> Bool {
            c >= 0x80 || c == 0x5F || c == 0x24 || (c >= 0x30 && c <= 0x39)
                || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A)
        }
        func skip(past end: UInt8, _ end2: UInt8?, from start: Int) -> Int {
            var j = start
            while j < text.count {
                if text[j] == end, end2 == nil || (j + 1 < text.count && text[j + 1] == end2!) {
                    return j + (end2 == nil ? 1 : 2)
                }
                j += 1
            }
            return j
        }
        func isWord(_ start: Int, _ end: Int, _ word: StaticString) -> Bool {
            guard end - start == word.utf8CodeUnitCount else { return false }
            return (0..<(end - start)).allSatisfy { text[start + $0] | 0x20 == word.utf8Start[$0] }
        }
        var i = 0
        while i < text.count {
            let c = text[i]
            switch c {
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"):
                i = skip(past: c, nil, from: i + 1)
            case UInt8(ascii: "["):
                i = skip(past: UInt8(ascii: "]"), nil, from: i + 1)
            case UInt8(ascii: "-") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "-"):
                i = skip(past: 10, nil, from: i + 2)
            case UInt8(ascii: "/") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "*"):
                i = skip(past: UInt8(ascii: "*"), UInt8(ascii: "/"), from: i + 2)
            case _ where isNameByte(c):
                let start = i
                while i < text.count, isNameByte(text[i]) { i += 1 }
                if isWord(start, i, "using") || isWord(start, i, "natural") { return true }
            default:
                i += 1
            }
        }
        return false
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
