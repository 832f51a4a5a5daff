// The key a query connection keeps a compiled statement under (QueryConnection.swift).

import Glibc

/// What a kept statement is found by. An index query's text is made from its table, the
/// columns it selects and the clause, and built only to compile it: building it and hashing
/// it were a tenth of a top-100 query.
enum StatementKey: Hashable {
    /// `SELECT "table"."column", … FROM "table" clause`.
    case query(table: String, columns: [String], clause: String)
    /// Any other statement, compiled under the rules of `table` (none for the engine's own).
    case text(table: String?, sql: String)

    /// By the texts' bytes, not String's `==`: that holds canonically equivalent texts equal
    /// ('é' as one scalar or as e and an accent), which SQLite does not, so one clause's
    /// statement answered the other's with the other literal's rows.
    static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.query(let t, let c, let k), .query(let t2, let c2, let k2)):
            return sameBytes(k, k2) && sameBytes(t, t2) && c.count == c2.count && zip(c, c2).allSatisfy(sameBytes)
        case (.text(let t, let s), .text(let t2, let s2)):
            guard sameBytes(s, s2) else { return false }
            guard let t, let t2 else { return t == nil && t2 == nil }
            return sameBytes(t, t2)
        default:
            return false
        }
    }

    func hash(into h: inout Hasher) {
        switch self {
        case .query(let table, let columns, let clause):
            h.combine(0)
            Self.hashBytes(table, &h)
            h.combine(columns.count)
            for c in columns { Self.hashBytes(c, &h) }
            Self.hashBytes(clause, &h)
        case .text(let table, let sql):
            h.combine(table == nil ? 1 : 2)
            if let table { Self.hashBytes(table, &h) }
            Self.hashBytes(sql, &h)
        }
    }

    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let compared = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                pa.isEmpty || memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0
            }
        }
        return (compared ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    private static func hashBytes(_ s: String, _ h: inout Hasher) {
        h.combine(s.utf8.count)
        // The same bytes hash the same whether or not the string is contiguous.
        if s.utf8.withContiguousStorageIfAvailable({ h.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            Array(s.utf8).withUnsafeBytes { h.combine(bytes: $0) }
        }
    }

    /// The bytes of the key's texts.
    var byteCount: Int {
        switch self {
        case .query(let table, let columns, let clause):
            return table.utf8.count + columns.reduce(0) { $0 + $1.utf8.count } + clause.utf8.count
        case .text(let table, let sql):
            return (table?.utf8.count ?? 0) + sql.utf8.count
        }
    }

    /// The statement's SQL.
    var sql: String {
        switch self {
        case .query(let table, let columns, let clause):
            let selected = columns.map { "\"\(table)\".\"\($0)\"" }.joined(separator: ", ")
            return "SELECT \(selected) FROM \"\(table)\" \(clause)"
        case .text(_, let sql):
            return sql
        }
    }
}
