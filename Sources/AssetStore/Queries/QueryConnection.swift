// Read-only raw SQLite connections for index queries. Each carries an authorizer that, while
// a client's clause is compiled, allows reading one index table (or the built-in index's
// view) and a fixed list of functions, and nothing else. GRDB keeps its own authorizer on
// its connections for good, so these connections are separate.

import CQueryTemp
import GRDBSQLite
import Glibc

/// One read-only connection with the query authorizer. Used by one thread at a time.
final class QueryConnection {
    let handle: OpaquePointer
    /// While a client's clause is compiled or run: the one table it may read. nil for the
    /// engine's own statements.
    var allowedTable: String?
    /// While a clause on the built-in index is compiled or run: whether the text names
    /// `object` anywhere (see `authorize`), once `authorize` has looked (a kept statement
    /// is not compiled again, and the scan of the text was a part of every query).
    var textNamesObject: Bool?
    /// While a clause is compiled or run: what its statement is kept by, its text once
    /// something needed it (SQLite compiles a kept statement again only when the schema
    /// changed), and whether it joins with USING or NATURAL once `authorize` has looked.
    var statementKey: StatementKey?
    var statementText: String?
    var textJoinsByName: Bool?
    /// What the authorizer refused last, for the error message.
    var refusal: String?
    /// Calls of aggregate functions (and of min and max, which may be) in the clause being
    /// compiled, which `authorize` bounds by `aggregateLimit`.
    var aggregateCalls = 0
    /// Function calls of any kind in the clause compiling: each can take a value near the
    /// length limit, and a row's calls run between two checks of the time limit.
    var functionCalls = 0
    static let functionLimit = 64
    /// Seconds a statement may run before it is interrupted.
    let timeLimit: Double
    /// Monotonic time after which the progress handler interrupts the running statement.
    var deadline = Double.infinity
    /// Raised when the client that asked went away; checked with the deadline.
    var cancellation: QueryCancellation?
    /// printf and format that fail where SQLite's return NULL, and SQLite's own of the
    /// functions CheckedText guards (kept alive for the handle).
    private var printf: CheckedPrintf?
    /// The VFS the connection's temporary files go through, which bounds their bytes
    /// (query_temp.c); nil for the engine's own reads.
    private let tempFiles: OpaquePointer?
    /// Its bound, for the message of a query it stops.
    let tempLimit: Int?
    /// What SQLite allocates for a client's statement while it compiles and runs is charged
    /// to this, which refuses it past `memoryLimit` (query_memory.c); nil for the engine's own.
    let memory: OpaquePointer?
    let memoryLimit: Int?

    static let allowedFunctions: Set<String> = [
        // scalar
        "abs", "coalesce", "ifnull", "iif", "nullif", "length", "lower", "upper", "substr", "substring", "trim",
        "ltrim", "rtrim", "replace", "instr", "round", "min", "max", "typeof", "like", "glob", "printf", "format",
        "hex", "unicode", "char", "sign", "likely", "unlikely",
        // aggregate
        "count", "sum", "total", "avg", "group_concat",
        // date and time
        "date", "time", "datetime", "julianday", "unixepoch", "strftime",
        // JSON
        "json", "json_extract", "json_array", "json_object", "json_type", "json_valid", "json_array_length",
        "json_quote",
    ]

    /// The functions whose calls `aggregateLimit` counts (min and max with one argument are
    /// aggregates; the authorizer is not told how many a call has).
    static let aggregateFunctions: Set<String> = [
        "count", "sum", "total", "avg", "group_concat", "min", "max",
    ]
    /// Each aggregate call keeps a value of up to the length limit (group_concat of a long
    /// printf), a query about this many of them: a query thread holds at most this many times
    /// the length limit.
    static let aggregateLimit = 16

    /// `clientQueries`: the connection runs clients' clauses, whose memory is bounded.
    init(
        path: String, timeLimit: Double, lengthLimit: Int = 64 << 20, tempLimit: Int? = nil,
        clientQueries: Bool = false
    ) throws(StoreError) {
        self.timeLimit = timeLimit
        self.tempLimit = tempLimit
        // A client's sort or group over many rows spills to temporary files, which could
        // otherwise fill the disk the store is on for as long as the query runs.
        let vfs = tempLimit.flatMap { assetd_query_temp_create(Int64($0)) }
        if tempLimit != nil, vfs == nil {
            throw StoreError(.internalError, "cannot make a query connection's temporary file bound")
        }
        tempFiles = vfs
        memoryLimit = clientQueries ? QueryConnection.memoryBound(lengthLimit: lengthLimit) : nil
        memory = memoryLimit.flatMap { assetd_query_memory_create(Int64($0)) }
        if memoryLimit != nil, memory == nil || QueryConnection.unboundedMemory != nil {
            assetd_query_temp_destroy(vfs)
            assetd_query_memory_destroy(memory)
            throw StoreError(
                .internalError, QueryConnection.unboundedMemory ?? "cannot bound a query connection's memory")
        }
        var h: OpaquePointer?
        let name = vfs.flatMap { assetd_query_temp_name($0) }
        let rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, name)
        guard rc == SQLITE_OK, let h else {
            if let h { sqlite3_close_v2(h) }
            assetd_query_temp_destroy(vfs)
            assetd_query_memory_destroy(memory)
            throw StoreError(.internalError, "cannot open a query connection (\(rc))")
        }
        handle = h
        sqlite3_busy_timeout(h, 10_000)
        // passUnretained: the connection outlives its handle (deinit closes the handle first).
        sqlite3_set_authorizer(h, queryAuthorizer, Unmanaged.passUnretained(self).toOpaque())
        // A client's clause can ask for a lot: bound the time and the size of any value.
        // Every 1,000 steps: a row of costly calls (a 16 MB value's upper) fits in far fewer.
        sqlite3_progress_handler(h, 1_000, queryProgress, Unmanaged.passUnretained(self).toOpaque())
        sqlite3_limit(h, SQLITE_LIMIT_LENGTH, Int32(clamping: lengthLimit))
        // Without it SQLite's own unbounded printf, instr, replace, trim, LIKE and GLOB would run.
        guard let checked = CheckedPrintf(lengthLimit: Int32(clamping: lengthLimit)) else {
            // deinit closes the handle: every stored property is set by now.
            throw StoreError(.internalError, "cannot open a query connection's function connection")
        }
        printf = checked
        checked.install(on: h)
        CheckedText.install(on: h, printf: checked)
        checked.expired = { [unowned self] in
            QueryConnection.monotonicNow() > self.deadline || self.cancellation?.isCancelled == true
        }
        // No map (Store.boundPageCaches); a cache that holds an index's hot pages.
        sqlite3_exec(h, "PRAGMA cache_size = -\(Store.queryCacheKiB)", nil, nil, nil)
    }

    /// Starts counting what SQLite allocates on this thread, for the connection's client
    /// statement, from zero (query_memory.c); `endMemoryCount` puts back what it returns.
    func beginMemoryCount() -> OpaquePointer? {
        _ = assetd_query_memory_take_refused(memory)
        return assetd_query_memory_begin(memory)
    }

    func endMemoryCount(_ previous: OpaquePointer?) { assetd_query_memory_enter(previous) }

    /// Whether an allocation was refused for the memory bound since the last call.
    func tookMemoryRefusal() -> Bool { assetd_query_memory_take_refused(memory) != 0 }

    /// Whether SQLite initialized itself with the counting allocator (query_memory.c).
    static var countingAllocatorInstalled: Bool { assetd_query_memory_installed() != 0 }

    /// The most the last client statement held, in bytes (0 without a bound).
    var memoryPeak: Int { Int(assetd_query_memory_peak(memory)) }

    /// Whether a temporary file's write was refused for the bound since the last call.
    func tookTempRefusal() -> Bool {
        guard let tempFiles else { return false }
        return assetd_query_temp_take_refused(tempFiles) != 0
    }

    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The engine's own statements, prepared once (never under a client's authorizer).
    /// Keyed by the text's address: hashing the text itself cost a tenth of a point read.
    /// The same SQL written at two places may be prepared twice, which is harmless.
    private var statements: [UnsafeRawPointer: OpaquePointer] = [:]

    /// Statements from `run`, kept compiled (KeptStatements.swift).
    var kept = KeptStatements()

    deinit {
        kept.removeAll()
        for s in statements.values { sqlite3_finalize(s) }
        // Not sqlite3_close_v2: with a statement still open it would leave a handle that closes
        // when that statement is finalized, and its files' close would then call the VFS freed
        // here. sqlite3_close refuses instead; the VFS is then leaked, deliberately.
        let rc = sqlite3_close(handle)
        if rc == SQLITE_OK {
            assetd_query_temp_destroy(tempFiles)
            assetd_query_memory_destroy(memory)
        } else {
            let note = "assetd: a query connection did not close (\(rc)); its handle and VFS are leaked\n"
            _ = note.withCString { write(2, $0, strlen($0)) }
        }
    }

    /// The bytes the temporary files hold now, and the most they held since the last call
    /// (which starts the peak again from now); nil without a bound.
    func takeTempBytes() -> (now: Int64, peak: Int64)? {
        guard let tempFiles else { return nil }
        return (Int64(assetd_query_temp_bytes(tempFiles)), Int64(assetd_query_temp_take_peak(tempFiles)))
    }

    #if DEBUG
    /// Tests: a statement prepared behind the connection's back and left open, which
    /// keeps the handle from closing.
    func strayStatement() -> OpaquePointer? {
        var stmt: OpaquePointer?
        sqlite3_prepare_v2(handle, "SELECT 1", -1, &stmt, nil)
        return stmt
    }

    /// Tests: the name the connection's VFS is registered under.
    var tempVFSName: String? { tempFiles.flatMap { assetd_query_temp_name($0) }.map { String(cString: $0) } }
    #endif

    /// A prepared statement for the engine's own `sql`, reset and cleared for reuse.
    func cached(_ sql: StaticString) throws -> OpaquePointer {
        precondition(sql.hasPointerRepresentation, "engine SQL is a string literal")
        let key = UnsafeRawPointer(sql.utf8Start)
        if let s = statements[key] {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
            return s
        }
        precondition(allowedTable == nil, "engine statements are prepared outside a client's clause")
        var stmt: OpaquePointer?
        let text = key.assumingMemoryBound(to: CChar.self)
        let length = Int32(sql.utf8CodeUnitCount)
        guard sqlite3_prepare_v3(handle, text, length, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil) == SQLITE_OK,
            let stmt
        else {
            throw StoreError(.internalError, "cannot prepare an internal statement (\(sqlite3_errcode(handle)))")
        }
        statements[key] = stmt
        return stmt
    }

    /// Steps the engine's own `sql` once `bind` has set its parameters, calling `body` with
    /// each row, and resets it. Outside BEGIN, the one statement is its own snapshot.
    func rows(_ sql: StaticString, bind: (OpaquePointer) -> Void, _ body: (RawRow) throws -> Void) throws {
        let s = try cached(sql)
        defer { sqlite3_reset(s) }
        bind(s)
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure(rc) }
            try body(RawRow(statement: s))
        }
    }

    /// Runs the engine's own `body` with SQLite's compiled maximum value length, then puts
    /// the clients' limit back: that limit stops a clause building a reply too large to
    /// send, but a stored object (a get after its touch committed, assetctl --db get) is
    /// answered whatever its size.
    func withoutLengthLimit<T>(_ body: () throws -> T) rethrows -> T {
        // Asking for more than the compiled maximum gets the maximum.
        let clients = sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, Int32.max)
        defer { sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, clients) }
        return try body()
    }

    /// The store error for a failed step of one of the engine's own statements.
    func failure(_ rc: Int32) -> StoreError {
        switch rc & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED: StoreError(.busy, "the database is busy")
        default: StoreError(.internalError, "a read failed (\(rc))")
        }
    }

    static let defaultView = IndexTable.table(IndexDefinition.defaultName)
    static let viewColumns = Set(IndexTable.defaultViewColumns)

    /// Whether `sql` contains the word `object` in any case, as an identifier, a quoted one or
    /// inside a literal or comment alike (SQLite has no escapes in names, so a reference to
    /// the table always spells it).
    static func namesObject(_ sql: String) -> Bool {
        func isNameByte(_ c: UInt8) -> Bool {
            c >= 0x80 || c == 0x5F || c == 0x24 || (c >= 0x30 && c <= 0x39)
                || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A)
        }
        let word = Array("object".utf8)
        let text = Array(sql.utf8)
        guard text.count >= word.count else { return false }
        for start in 0...(text.count - word.count) {
            guard start == 0 || !isNameByte(text[start - 1]) else { continue }
            guard (0..<word.count).allSatisfy({ text[start + $0] | 0x20 == word[$0] }) else { continue }
            if start + word.count == text.count || !isNameByte(text[start + word.count]) { return true }
        }
        return false
    }

    /// The text of the client's statement being compiled or run.
    func clauseSQL() -> String {
        if let statementText { return statementText }
        let text = statementKey?.sql ?? ""
        statementText = text
        return text
    }

    /// `view` is the innermost view the access comes through (SQLite's sixth argument).
    func authorize(
        _ action: Int32, _ a: UnsafePointer<CChar>?, _ b: UnsafePointer<CChar>?, _ db: UnsafePointer<CChar>?,
        _ view: UnsafePointer<CChar>?
    ) -> Int32 {
        guard let table = allowedTable else { return SQLITE_OK }
        switch action {
        case SQLITE_SELECT:
            // SQLite compares the columns of a USING or NATURAL join without asking here, so
            // such a join could read a table this never hears of (object, through the index).
            if textJoinsByName == nil { textJoinsByName = QueryText.joinsByName(clauseSQL()) }
            guard textJoinsByName == false else {
                refusal = "USING and NATURAL joins are not allowed (join with ON)"
                return SQLITE_DENY
            }
            return SQLITE_OK
        case SQLITE_READ:
            let name = a.map { String(cString: $0) } ?? ""
            let schema = db.map { String(cString: $0) } ?? "main"
            if name.lowercased() == table.lowercased() && schema == "main" { return SQLITE_OK }
            if name.lowercased() == "object" && schema == "main" && table == Self.defaultView, let b {
                // The built-in index is a view of object: the view's columns are read through
                // it. SQLite names as "the view" any FROM item of that name, a client's CTE
                // too, so only the columns the view shows pass, whatever the name. A query
                // that uses none of them (COUNT(*)) reads the table with no column, and SQLite
                // reports that without the view: allowed only if the text never says object,
                // so that it can only come from the view.
                let column = String(cString: b).lowercased()
                if let view, String(cString: view).lowercased() == table, Self.viewColumns.contains(column) {
                    return SQLITE_OK
                }
                if column.isEmpty {
                    if textNamesObject == nil { textNamesObject = Self.namesObject(clauseSQL()) }
                    if textNamesObject == false { return SQLITE_OK }
                }
            }
            refusal = "the clause may read only its index"
            return SQLITE_DENY
        case SQLITE_FUNCTION:
            let name = b.map { String(cString: $0).lowercased() } ?? ""
            functionCalls += 1
            guard functionCalls <= Self.functionLimit else {
                refusal = "more than \(Self.functionLimit) function calls"
                return SQLITE_DENY
            }
            if Self.aggregateFunctions.contains(name) {
                aggregateCalls += 1
                guard aggregateCalls <= Self.aggregateLimit else {
                    refusal = "more than \(Self.aggregateLimit) aggregate, min or max calls"
                    return SQLITE_DENY
                }
            }
            if Self.allowedFunctions.contains(name) { return SQLITE_OK }
            refusal = "function \(name) is not allowed"
            return SQLITE_DENY
        case SQLITE_PRAGMA:
            refusal = "PRAGMA is not allowed"
            return SQLITE_DENY
        case SQLITE_ATTACH, SQLITE_DETACH:
            refusal = "ATTACH is not allowed"
            return SQLITE_DENY
        default:
            refusal = "only reading is allowed"
            return SQLITE_DENY
        }
    }
}

private let queryAuthorizer:
    @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?
    ) -> Int32 = { ctx, action, a, b, db, view in
        // ctx!: set at init.
        Unmanaged<QueryConnection>.fromOpaque(ctx!).takeUnretainedValue().authorize(action, a, b, db, view)
    }

private let queryProgress: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ctx in
    // ctx set at init; non-zero interrupts the statement.
    let conn = Unmanaged<QueryConnection>.fromOpaque(ctx!).takeUnretainedValue()
    return QueryConnection.monotonicNow() > conn.deadline || conn.cancellation?.isCancelled == true ? 1 : 0
}
