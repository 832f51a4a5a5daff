// Turns a client's clause and JSON parameters into SQL text and bindings: `?` outside
// literals, identifiers and comments is a parameter; an array parameter expands to `?,?,…`,
// an empty one to NULL (so `IN (?)` matches nothing).

import GRDB
import GRDBSQLite

enum QueryText {
    static func expand(_ clause: String, _ parameters: [JSONValue]) throws(StoreError) -> (String, [JSONValue]) {
        var out = ""
        var args = [JSONValue]()
        var next = 0
        let chars = Array(clause.unicodeScalars)
        var i = 0
        func copyUntil(_ end: String) {
            let endScalars = Array(end.unicodeScalars)
            while i < chars.count {
                if chars[i...].starts(with: endScalars) {
                    for s in endScalars { out.unicodeScalars.append(s) }
                    i += endScalars.count
                    return
                }
                out.unicodeScalars.append(chars[i])
                i += 1
            }
        }
        while i < chars.count {
            let c = chars[i]
            switch c {
            case "'", "\"", "`":
                out.unicodeScalars.append(c)
                i += 1
                copyUntil(String(c))
            case "[":
                out.unicodeScalars.append(c)
                i += 1
                copyUntil("]")
            case "-" where i + 1 < chars.count && chars[i + 1] == "-":
                copyUntil("\n")
            case "/" where i + 1 < chars.count && chars[i + 1] == "*":
                out += "/*"
                i += 2
                copyUntil("*/")
            case "?":
                i += 1
                if i < chars.count, chars[i].properties.numericType != nil {
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
                        out += "NULL"
                    } else {
                        out += Array(repeating: "?", count: items.count).joined(separator: ",")
                        for item in items {
                            try checkScalar(item)
                            args.append(item)
                        }
                    }
                default:
                    try checkScalar(p)
                    out += "?"
                    args.append(p)
                }
            default:
                out.unicodeScalars.append(c)
                i += 1
            }
        }
        guard next == parameters.count else {
            throw StoreError(.invalidParams, "\(parameters.count) parameters given for \(next) ?")
        }
        return (out, args)
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

    static func text(_ stmt: OpaquePointer, _ i: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, i) else { return "" }
        return String(cString: p)
    }

    static func value(_ stmt: OpaquePointer, _ i: Int32) -> JSONValue {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(stmt, i))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(stmt, i))
        case SQLITE_TEXT: return .string(String(cString: sqlite3_column_text(stmt, i)))
        default: return .null
        }
    }

    /// SQLite's message for the last error when it names only a column or function; a
    /// syntax error's message quotes SQL text (ours, too), so it is replaced.
    static func describe(_ db: OpaquePointer) -> String {
        let message = String(cString: sqlite3_errmsg(db))
        let safe = ["no such column: ", "no such function: ", "wrong number of arguments to function ",
                    "misuse of aggregate", "ambiguous column name: ", "string or blob too big"]
        return safe.contains(where: message.hasPrefix) ? message : "syntax error in the clause or function"
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
