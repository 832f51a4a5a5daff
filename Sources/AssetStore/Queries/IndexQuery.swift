// Index queries and aggregates (assetd(8), DATA MODEL, Secondary indexes): a client's SQL suffix
// with `?` parameters (an array expands to a list, an empty one matches nothing), compiled under
// the authorizer on a read-only connection. Refusals are `query_rejected`; messages never echo SQL.

import GRDBSQLite
import JSON

/// What an index query returns per row.
public enum IndexInclude: String, Sendable, CaseIterable {
    /// `{collection, key}`.
    case keys
    /// Every column by name.
    case rows
    /// Every column, plus `value` and `metadata`.
    case objects
}

/// One row of a query result.
public struct IndexRow: Sendable, Hashable {
    /// The object.
    public var ref: ObjectRef
    /// The index columns, with `rows` or `objects`.
    public var columns: [String: JSONValue]?
    /// The object's value, with `objects`.
    public var value: JSONValue?
    /// The object's metadata, with `objects`.
    public var metadata: JSONValue?

    /// The row as the protocol shows it.
    public var json: JSONValue {
        var o = columns ?? [:]
        o["collection"] = .string(ref.collection)
        o["key"] = .string(ref.key)
        if let value { o["value"] = value }
        if columns != nil, value != nil { o["metadata"] = metadata ?? .null }
        return .object(o)
    }
}

/// The result of an aggregate.
public enum AggregateResult: Sendable, Hashable {
    /// Without grouping: one value.
    case value(JSONValue)
    /// With grouping: one row per group, the group columns by name plus `value`.
    case rows([[String: JSONValue]])

    /// `{value}` or `{rows}`.
    public var json: JSONValue {
        switch self {
        case .value(let v): return .object(["value": v])
        case .rows(let rows): return .object(["rows": .array(rows.map(JSONValue.object))])
        }
    }
}

extension Store {
    /// Rows of `index` matching `clause` (`WHERE …`, `ORDER BY …`, `LIMIT …`); `replyLimit`
    /// stops one whose rows would take more bytes than that as JSON (`reply_too_large`) before
    /// they are all in memory.
    public func query(
        index: String = IndexDefinition.defaultName, clause: String, parameters: [JSONValue] = [],
        include: IndexInclude = .keys, replyLimit: Int = .max, cancellation: QueryCancellation? = nil
    ) throws -> [IndexRow] {
        try flushAccessesBeforeQuery()
        let table = try tableName(index)
        let (sql, args) = try QueryText.expand(clause, parameters)
        // Only the columns asked for, named up front (qualified: a clause may join the table
        // with itself under an alias); the object's id last, only to read objects. A compound
        // SELECT, which could make up rows, is refused by its text (QueryConnection.compile).
        let extra =
            include == .keys
            ? []
            : IndexTable.columns(of: index == IndexDefinition.defaultName ? nil : try definition(index)).dropFirst(2)
        let columns =
            include == .keys ? Self.keyColumns : Self.keyColumns + extra + (include == .objects ? ["object_id"] : [])
        let statement = StatementKey.query(table: table, columns: columns, clause: sql)
        return try queries.with(cancellation: cancellation) { conn in
            // One snapshot for the rows and the objects read after them; a lone statement is
            // one already.
            try conn.inReadTransaction(if: include == .objects) {
                var out = [IndexRow]()
                var ids = [Int64]()
                // What the rows' text takes, a little under their JSON (quotes and names aside).
                var bytes = 0
                // Rows in key order share their collection: one long string for a run of them.
                var collection = ""
                let inline = QueryText.inlineLayoutHolds
                try conn.run(statement, args, table: table) { stmt in
                    let ref = ObjectRef(
                        QueryText.text(stmt, 0, reusing: &collection, inline: inline),
                        QueryText.text(stmt, 1, inline: inline))
                    // Counted from the strings made anyway: asking SQLite each column's type and
                    // length again was a fifth of a top-100 query. A row is at most a few values
                    // of SQLite's length limit, so the limit still stops a reply before it is
                    // all in memory.
                    bytes += ref.collection.utf8.count + ref.key.utf8.count
                    var columns: [String: JSONValue]?
                    if !extra.isEmpty {
                        var c = [String: JSONValue](minimumCapacity: extra.count)
                        for (i, name) in extra.enumerated() {
                            let v = QueryText.value(stmt, Int32(i + 2))
                            if case .string(let t) = v { bytes += t.utf8.count } else { bytes += 8 }
                            c[name] = v
                        }
                        columns = c
                    }
                    if bytes > replyLimit { throw StoreError.replyTooLarge(replyLimit) }
                    if include == .objects { ids.append(sqlite3_column_int64(stmt, Int32(2 + extra.count))) }
                    // Room for a page of rows at the first: growing from one by doubling was
                    // seven allocations and copies for a top-100, a fortieth of its cost.
                    if out.isEmpty { out.reserveCapacity(64) }
                    out.append(IndexRow(ref: ref, columns: columns))
                }
                if include == .objects {
                    for (i, id) in ids.enumerated() {
                        try conn.run("SELECT value, metadata FROM object WHERE id = ?", [.int(id)], table: nil) {
                            stmt in
                            try QueryText.count(stmt, 2, &bytes, limit: replyLimit)
                            out[i].value = try Reads.json(String(cString: sqlite3_column_text(stmt, 0)))
                            if sqlite3_column_type(stmt, 1) != SQLITE_NULL {
                                out[i].metadata = try Reads.json(String(cString: sqlite3_column_text(stmt, 1)))
                            }
                        }
                    }
                }
                return out
            }
        }
    }

    /// An aggregate such as `SUM(size)` or `COUNT(*)` over rows matching `clause`,
    /// optionally grouped by index columns; `replyLimit` as for `query`.
    public func aggregate(
        index: String = IndexDefinition.defaultName, function: String, clause: String = "",
        parameters: [JSONValue] = [], groupBy: [String] = [], replyLimit: Int = .max,
        cancellation: QueryCancellation? = nil
    ) throws -> AggregateResult {
        try flushAccessesBeforeQuery()
        let table = try tableName(index)
        let columns = IndexTable.columns(of: index == IndexDefinition.defaultName ? nil : try definition(index))
        for g in groupBy where !columns.contains(g) {
            throw StoreError(.queryRejected, "\"\(g)\" is not a column of index \(index)")
        }
        guard !function.contains(";") else { throw StoreError(.queryRejected, "the function must be one expression") }
        guard QueryText.isWhereClause(clause) else {
            throw StoreError(.queryRejected, "an aggregate takes only a WHERE clause")
        }
        let (sql, args) = try QueryText.expand(clause, parameters)
        let groups = groupBy.map { "\"\($0)\"" }.joined(separator: ", ")
        let text =
            groupBy.isEmpty
            ? "SELECT \(function) FROM \"\(table)\" \(sql)"
            : "SELECT \(groups), \(function) FROM \"\(table)\" \(sql) GROUP BY \(groups)"
        return try queries.with(cancellation: cancellation) { conn in
            var rows = [[String: JSONValue]]()
            var single: JSONValue = .null
            // The bytes of the result as it will be written, `{"rows":[` and `]}` or
            // `{"value":` and `}` and each row's JSON, names, quotes and escapes included: a
            // reply is stopped here exactly when its result alone would pass the limit. A
            // row's text is counted first, before the row is made: a group's value can be as
            // long as the length limit, and there can be a group per object.
            var bytes = groupBy.isEmpty ? 10 : 11
            try conn.run(text, args, table: table) { stmt in
                // Without grouping only the first row is answered (a function that is no
                // aggregate has one per matching row).
                if groupBy.isEmpty, !rows.isEmpty { return }
                try QueryText.countText(stmt, Int32(groupBy.count + 1), bytes, limit: replyLimit)
                let counted: JSONValue
                if groupBy.isEmpty {
                    single = QueryText.value(stmt, 0)
                    rows.append([:])
                    counted = single
                } else {
                    var row = [String: JSONValue]()
                    for (i, g) in groupBy.enumerated() { row[g] = QueryText.value(stmt, Int32(i)) }
                    row["value"] = QueryText.value(stmt, Int32(groupBy.count))
                    if !rows.isEmpty { bytes += 1 }
                    rows.append(row)
                    counted = .object(row)
                }
                guard replyLimit != .max else { return }
                // Counted, not written: 16 MB of char(1) would be written as 96 MB.
                bytes += counted.writtenCount
                if bytes > replyLimit { throw StoreError.replyTooLarge(replyLimit) }
            }
            return groupBy.isEmpty ? .value(single) : .rows(rows)
        }
    }

    /// SQLite's query plan for a query on `index` (one line per step), to check that a shape
    /// uses an index rather than a scan.
    public func explain(
        index: String = IndexDefinition.defaultName, clause: String, parameters: [JSONValue] = [],
        function: String? = nil, groupBy: [String] = []
    ) throws -> [String] {
        let table = try tableName(index)
        let (sql, args) = try QueryText.expand(clause, parameters)
        let groups = groupBy.map { "\"\($0)\"" }.joined(separator: ", ")
        let select: String
        if let function {
            select =
                groupBy.isEmpty
                ? "SELECT \(function) FROM \"\(table)\" \(sql)"
                : "SELECT \(groups), \(function) FROM \"\(table)\" \(sql) GROUP BY \(groups)"
        } else {
            select = "SELECT * FROM \"\(table)\" \(sql)"
        }
        return try queries.with { conn in
            var lines = [String]()
            try conn.run("EXPLAIN QUERY PLAN " + select, args, table: table) { stmt in
                lines.append(String(cString: sqlite3_column_text(stmt, 3)))
            }
            return lines
        }
    }

    /// What a query for keys selects; every query starts with them.
    private static let keyColumns = ["collection", "key"]

    private func definition(_ index: String) throws -> IndexDefinition {
        guard let def = state.withLock({ $0.indexes[index] }) else {
            throw StoreError(.notFound, "no index \"\(index)\"")
        }
        return def
    }

    private func tableName(_ index: String) throws -> String {
        try checkOpen()
        // The built-in index's name made once: building it was a fifth of a query's own
        // set-up.
        guard index != IndexDefinition.defaultName else { return QueryConnection.defaultView }
        _ = try definition(index)
        return IndexTable.table(index)
    }
}

extension QueryConnection {
    /// Runs statements between BEGIN and COMMIT so several see one snapshot.
    func inReadTransaction<T>(if needed: Bool = true, _ body: () throws -> T) throws -> T {
        guard needed else { return try body() }
        let begin = try cached("BEGIN")
        _ = sqlite3_step(begin)
        sqlite3_reset(begin)
        defer {
            // Never leave it open: an open read transaction pins an old snapshot.
            if let commit = try? cached("COMMIT"), sqlite3_step(commit) == SQLITE_DONE {
                sqlite3_reset(commit)
            } else {
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
        }
        return try body()
    }

    /// Whether a statement's failure `rc` can come from a refused allocation (`memoryRefusal`):
    /// SQLite reports an I/O error that ran out of memory (SQLITE_IOERR_NOMEM) as SQLITE_NOMEM at
    /// its interface, and any other I/O error is the disk's, to be reported as such.
    static func mayComeFromRefusal(_ rc: Int32) -> Bool { rc & 0xff == SQLITE_NOMEM }

    /// Compiles `sql` (under the authorizer when `table` is set), binds, and steps through rows.
    func run(_ sql: String, _ args: [JSONValue], table: String?, row: (OpaquePointer) throws -> Void) throws {
        try run(.text(table: table, sql: sql), args, table: table, row: row)
    }

    /// The same for the statement `key` names, kept from an earlier use or compiled now.
    func run(_ key: StatementKey, _ args: [JSONValue], table: String?, row: (OpaquePointer) throws -> Void) throws {
        // A client's clause can make many values of the length limit at once: its memory is
        // bounded as a whole, from the compile to the last step.
        guard table == nil else { return try chargingMemory { try runStatement(key, args, table: table, row: row) } }
        try runStatement(key, args, table: table, row: row)
    }

    private func runStatement(
        _ key: StatementKey, _ args: [JSONValue], table: String?, row: (OpaquePointer) throws -> Void
    ) throws {
        allowedTable = table
        textNamesObject = nil
        statementKey = key
        statementText = nil
        textJoinsByName = nil
        refusal = nil
        aggregateCalls = 0
        functionCalls = 0
        deadline = QueryConnection.monotonicNow() + timeLimit
        _ = tookTempRefusal()
        defer { allowedTable = nil }
        let found = kept.find(key)
        let stmt = try found ?? compile(key)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
            // Measured once reset, when it holds only its program and text.
            if found == nil { kept.keep(stmt, key) }
        }
        guard Int(sqlite3_bind_parameter_count(stmt)) == args.count else {
            throw StoreError(.queryRejected, "the query was refused: use only ? parameters")
        }
        for (i, a) in args.enumerated() { try QueryText.bind(stmt, Int32(i + 1), a) }
        while true {
            let step = sqlite3_step(stmt)
            if step == SQLITE_ROW { try row(stmt); continue }
            if step == SQLITE_DONE { return }
            if step == SQLITE_AUTH {
                throw StoreError(.queryRejected, "the query was refused: \(refusal ?? "not authorized")")
            }
            if step & 0xff == SQLITE_TOOBIG {
                // SQLite's length limit on query connections is the reply limit; printf and
                // format report passing it too (CheckedPrintf.swift).
                throw StoreError(.replyTooLarge, "the query built a value larger than the reply limit: ask for less")
            }
            if step == SQLITE_INTERRUPT, cancellation?.isCancelled == true {
                throw StoreError(.queryRejected, "the query was stopped: its client went away or assetd is stopping")
            }
            if step == SQLITE_INTERRUPT {
                throw StoreError(.queryRejected, "the query ran longer than \(Int(timeLimit)) s and was stopped")
            }
            if step & 0xff == SQLITE_FULL, tookTempRefusal(), let tempLimit {
                throw StoreError(
                    .queryRejected,
                    "the query needed more than \(tempLimit) bytes of temporary files: sort or group less")
            }
            if let refusal = memoryRefusal(step) { throw refusal }
            if step & 0xff == SQLITE_NOMEM {
                throw StoreError(.queryRejected, "the query failed: out of memory")
            }
            throw StoreError(.queryRejected, "the query failed: \(QueryText.describe(handle))")
        }
    }

    /// Compiles the statement `key` names as `run` sets it up and checks it is one read-only
    /// statement.
    private func compile(_ key: StatementKey) throws -> OpaquePointer {
        let sql = clauseSQL()
        if allowedTable != nil, QueryText.isCompound(sql) {
            throw StoreError(.queryRejected, "the query was refused: UNION, INTERSECT and EXCEPT only in a subquery")
        }
        var stmt: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let rc = sql.withCString { sqlite3_prepare_v2(handle, $0, -1, &stmt, &tail) }
        guard rc == SQLITE_OK, let stmt else {
            sqlite3_finalize(stmt)
            if let refusal = memoryRefusal(rc) { throw refusal }
            if rc == SQLITE_AUTH || refusal != nil {
                throw StoreError(.queryRejected, "the query was refused: \(refusal ?? "not authorized")")
            }
            throw StoreError(.queryRejected, "the query is not valid: \(QueryText.describe(handle))")
        }
        if let tail, !String(cString: tail).allSatisfy({ $0.isWhitespace || $0 == ";" }) {
            sqlite3_finalize(stmt)
            throw StoreError(.queryRejected, "the query was refused: only one statement is allowed")
        }
        guard sqlite3_stmt_readonly(stmt) != 0 else {
            sqlite3_finalize(stmt)
            throw StoreError(.queryRejected, "the query was refused: only reading is allowed")
        }
        return stmt
    }
}
