// Stepping a GRDB statement through the C API, for the engine's hottest statements inside
// the write transaction (edges of an object being deleted, index rows of a put): GRDB's Row
// builds a column-name table per cursor, which cost a third of a policy expiry. Writes
// stepped here skip GRDB's per-statement observation, which the engine never uses (its one
// transaction observer watches commits, and commits go through GRDB). Each statement is
// reset before returning so GRDB finds it as it left it.

import GRDB
import GRDBSQLite

/// One result row, read by column index.
struct RawRow {
    let statement: OpaquePointer

    func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(statement, i) }
    func double(_ i: Int32) -> Double { sqlite3_column_double(statement, i) }
    func isNull(_ i: Int32) -> Bool { sqlite3_column_type(statement, i) == SQLITE_NULL }
    func text(_ i: Int32) -> String? {
        guard let p = sqlite3_column_text(statement, i) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, i))), as: UTF8.self)
    }
}

extension Statement {
    /// Runs the SELECT with `arguments`, calling `body` for each row.
    func forEachRawRow(_ arguments: StatementArguments, _ body: (RawRow) throws -> Void) throws {
        try setArguments(arguments)
        let s = sqliteStatement
        defer { sqlite3_reset(s) }
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "step failed", sql: nil)
            }
            try body(RawRow(statement: s))
        }
    }

    /// Runs a statement that returns no rows (INSERT, DELETE) after `bind` sets its parameters.
    func executeRaw(_ bind: (OpaquePointer) -> Void) throws {
        let s = sqliteStatement
        sqlite3_reset(s)
        sqlite3_clear_bindings(s)
        bind(s)
        let rc = sqlite3_step(s)
        sqlite3_reset(s)
        guard rc == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "step failed", sql: nil)
        }
    }
}
