// The statements a query connection keeps compiled (QueryConnection.swift), bounded by count
// and by the memory they hold.

import GRDBSQLite

/// Statements from `QueryConnection.run`, by table and text, kept once they passed its checks:
/// a query asked again is not compiled again (for the built-in index, a view expanded under
/// the authorizer, the compile was a third of a top-100 query). A statement is compiled under
/// the rules of its table only, so the table is part of the key.
///
/// Bounded by count and by bytes: a kept statement holds its program, its text and the key
/// (a reset leaves no values and the bindings are cleared), and a client's text is up to a
/// request long. 64 statements of 1 MiB clauses held 184 MiB on one connection, outside the
/// per-query memory bound (each was charged only while it compiled). Emptied when either bound
/// would be passed; a statement larger than `statementBytes` is run, never kept.
struct KeptStatements {
    private var statements: [StatementKey: OpaquePointer] = [:]
    /// The statement used last: a client repeating its query is found by comparing keys, which
    /// costs a fraction of hashing one (a hundredth of a top-100 query).
    private var last: (key: StatementKey, statement: OpaquePointer)?
    /// What the kept statements hold, as measured when each was kept.
    private(set) var bytes = 0

    static let countLimit = 64
    static let byteLimit = 8 << 20
    static let statementBytes = 1 << 20

    var count: Int { statements.count }

    mutating func find(_ key: StatementKey) -> OpaquePointer? {
        if let last, last.key == key { return last.statement }
        guard let statement = statements[key] else { return nil }
        last = (key, statement)
        return statement
    }

    /// Keeps `stmt`, reset, under `key`, or finalizes it if it is too large to keep.
    mutating func keep(_ stmt: OpaquePointer, _ key: StatementKey) {
        // SQLite's measure of the statement (its program and text) and the key's texts.
        let size = Int(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_MEMUSED, 0)) + key.byteCount
        guard size <= Self.statementBytes else {
            sqlite3_finalize(stmt)
            return
        }
        if statements.count >= Self.countLimit || bytes + size > Self.byteLimit { removeAll() }
        statements[key] = stmt
        last = (key, stmt)
        bytes += size
    }

    mutating func removeAll() {
        for s in statements.values { sqlite3_finalize(s) }
        statements = [:]
        last = nil
        bytes = 0
    }
}
