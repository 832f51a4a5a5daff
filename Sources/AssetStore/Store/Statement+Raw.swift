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
        return String(
            decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, i))), as: UTF8.self)
    }
    /// Column `i` as UTF-8 bytes (empty for NULL), valid until the statement steps or resets.
    func bytes(_ i: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let p = sqlite3_column_text(statement, i) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, i)))
    }
}

extension Statement {
    /// Runs the SELECT with `arguments`, calling `body` for each row.
    func forEachRawRow(_ arguments: StatementArguments, _ body: (RawRow) throws -> Void) throws {
        let s = sqliteStatement
        try Statement.checkTransaction(s)
        try setArguments(arguments)
        try Statement.stepRows(s, body)
    }

    /// Runs the SELECT after `bind` sets its parameters, calling `body` for each row.
    func forEachRawRow(_ bind: (OpaquePointer) -> Void, _ body: (RawRow) throws -> Void) throws {
        let s = sqliteStatement
        try Statement.checkTransaction(s)
        sqlite3_reset(s)
        sqlite3_clear_bindings(s)
        bind(s)
        try Statement.stepRows(s, body)
    }

    /// Steps `s` to its end, calling `body` for each row, and resets it.
    private static func stepRows(_ s: OpaquePointer, _ body: (RawRow) throws -> Void) throws {
        defer { sqlite3_reset(s) }
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else {
                throw Statement.stepError(s, rc)
            }
            try body(RawRow(statement: s))
        }
    }

    /// Runs a statement that returns no rows (INSERT, DELETE) after `bind` sets its parameters,
    /// inside a transaction only.
    func executeRaw(_ bind: (OpaquePointer) -> Void) throws {
        let s = sqliteStatement
        try Statement.checkTransaction(s)
        sqlite3_reset(s)
        sqlite3_clear_bindings(s)
        bind(s)
        let rc = sqlite3_step(s)
        // Taken before the reset, which may clear the connection's message.
        let failure = rc == SQLITE_DONE ? nil : Statement.stepError(s, rc)
        sqlite3_reset(s)
        if let failure { throw failure }
    }

    /// `executeRaw`, then the connection's last inserted rowid (for an INSERT) and its changes
    /// count: read from the C API, as GRDB's getters cost more than a short statement's step.
    func executeRawCounting(_ bind: (OpaquePointer) -> Void) throws -> (rowID: Int64, changes: Int) {
        try executeRaw(bind)
        let db = sqlite3_db_handle(sqliteStatement)
        return (sqlite3_last_insert_rowid(db), Int(sqlite3_changes(db)))
    }

    /// Runs a SELECT after `bind` sets its parameters: its first row's first column, nil if
    /// it returns no row.
    func firstInt64Raw(_ bind: (OpaquePointer) -> Void) throws -> Int64? {
        let s = sqliteStatement
        try Statement.checkTransaction(s)
        sqlite3_reset(s)
        sqlite3_clear_bindings(s)
        bind(s)
        defer { sqlite3_reset(s) }
        switch sqlite3_step(s) {
        case SQLITE_ROW: return sqlite3_column_int64(s, 0)
        case SQLITE_DONE: return nil
        case let rc: throw Statement.stepError(s, rc)
        }
    }

    /// `executeRaw` with text parameters bound from `texts` without a copy (`bind` gets its
    /// bytes): SQLite's copy of a bound text is a malloc and a free behind its
    /// memory-statistics mutex, several of them a put. The bindings are cleared before
    /// `texts` is let go, whether the statement succeeded or not.
    func executeRaw(borrowing texts: [UInt8], _ bind: (OpaquePointer, UnsafeBufferPointer<UInt8>) -> Void) throws {
        try texts.withUnsafeBufferPointer { b in
            defer { sqlite3_clear_bindings(sqliteStatement) }
            try executeRaw { s in bind(s, b) }
        }
    }

    /// `firstInt64Raw` with text parameters bound from `texts` without a copy, as
    /// `executeRaw(borrowing:_:)`.
    func firstInt64Raw(
        borrowing texts: [UInt8], _ bind: (OpaquePointer, UnsafeBufferPointer<UInt8>) -> Void
    ) throws -> Int64? {
        try texts.withUnsafeBufferPointer { b in
            defer { sqlite3_clear_bindings(sqliteStatement) }
            return try firstInt64Raw { s in bind(s, b) }
        }
    }

    /// Throws SQLITE_ABORT if the connection is out of a transaction: the bind-and-step
    /// helpers run only inside the write transaction, and SQLite rolls a transaction back by
    /// itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM outside a statement
    /// journal). GRDB refuses its own statements then (checkForAbortedTransaction); a
    /// statement stepped here would otherwise run in autocommit mode and commit on its own.
    /// The failure of a step, with SQLite's message and the statement's SQL, as GRDB reports
    /// its own (`Store.mapErrors` keeps them out of replies).
    private static func stepError(_ s: OpaquePointer, _ rc: Int32) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(sqlite3_db_handle(s))),
            sql: sqlite3_sql(s).map { String(cString: $0) })
    }

    private static func checkTransaction(_ s: OpaquePointer) throws {
        guard sqlite3_get_autocommit(sqlite3_db_handle(s)) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "Transaction was aborted", sql: nil)
        }
    }

    /// Binds parameter `i` (from 1) to `text`, all its bytes (SQLite copies them). Through
    /// `withUTF8`, not the implicit String-to-pointer conversion, which made a heap copy of
    /// every small string (about 1,000 instructions a bind).
    static func bindText(_ s: OpaquePointer, _ i: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            // Defensive: an empty string has had an address in every build tried, but a null
            // pointer would bind NULL instead of ''.
            let bytes = UnsafeRawPointer(utf8.baseAddress ?? emptyText.utf8Start)
            sqlite3_bind_text(s, i, bytes.assumingMemoryBound(to: CChar.self), Int32(utf8.count), sqliteTransient)
        }
    }

    /// Binds parameter `i` (from 1) to an integer, for callers outside this file's fence.
    static func bindInt64(_ s: OpaquePointer, _ i: Int32, _ value: Int64) { sqlite3_bind_int64(s, i, value) }

    /// Binds parameter `i` (from 1) to a real: the exact double, no text round trip.
    static func bindDouble(_ s: OpaquePointer, _ i: Int32, _ value: Double) { sqlite3_bind_double(s, i, value) }

    /// Binds parameter `i` (from 1) to the text `utf8` without copying it: the bytes must
    /// stay where they are until the statement is reset (a point read binds its ref this way,
    /// sparing two copies through SQLite's allocator).
    static func bindText(_ s: OpaquePointer, _ i: Int32, borrowing utf8: UnsafeBufferPointer<UInt8>) {
        let bytes = UnsafeRawPointer(utf8.baseAddress ?? emptyText.utf8Start)
        sqlite3_bind_text(s, i, bytes.assumingMemoryBound(to: CChar.self), Int32(utf8.count), nil)
    }
}

extension Statement {
    /// Binds parameter `i` (from 1) to the bytes `range` of `texts` without a copy: only
    /// inside `executeRaw(borrowing:_:)` or `firstInt64Raw(borrowing:_:)`, which keep them
    /// alive while the statement may read them.
    static func bindBorrowedText(
        _ s: OpaquePointer, _ i: Int32, _ texts: UnsafeBufferPointer<UInt8>, _ range: Range<Int>
    ) {
        bindText(s, i, borrowing: UnsafeBufferPointer(rebasing: texts[range]))
    }
}

/// Where a zero-length text is bound from.
private let emptyText: StaticString = ""

/// SQLITE_TRANSIENT, a C macro Swift does not import: SQLite copies what is bound.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
