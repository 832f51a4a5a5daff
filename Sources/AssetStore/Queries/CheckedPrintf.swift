// printf and format for clients' clauses. SQLite's own give NULL, and no error, when their text
// would pass the length limit, so a query answered null where it could not compute a value.
// These run SQLite's printf on a private in-memory connection and turn that NULL into
// SQLITE_TOOBIG, which the query reports.

import GRDBSQLite

/// SQLite's printf on a private connection of its own, for one query connection's thread.
final class CheckedPrintf {
    private let handle: OpaquePointer
    /// `SELECT printf(?1, …, ?n)` by argument count.
    private var statements: [Int32: OpaquePointer] = [:]
    /// `SELECT f(?1, …, ?n)` for CheckedText's functions, by the caller's key and count.
    private var builtins: [Int32: OpaquePointer] = [:]
    /// True once the running query is past its time limit or cancelled (set by the query
    /// connection): the progress handler runs only between a statement's jumps, and a row
    /// can call these functions many times between two of them.
    var expired: () -> Bool = { false }

    /// Ends the running statement if `expired`: true when it did (the call then answers
    /// nothing more).
    func stopIfExpired(_ ctx: OpaquePointer?) -> Bool {
        guard expired() else { return false }
        sqlite3_interrupt(sqlite3_context_db_handle(ctx))
        sqlite3_result_error_code(ctx, SQLITE_INTERRUPT)
        return true
    }

    init?(lengthLimit: Int32) {
        var h: OpaquePointer?
        guard sqlite3_open_v2(":memory:", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let h
        else {
            if let h { sqlite3_close_v2(h) }
            return nil
        }
        handle = h
        sqlite3_limit(h, SQLITE_LIMIT_LENGTH, lengthLimit)
        sqlite3_limit(h, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, CheckedText.patternLimit)
    }

    deinit {
        for s in builtins.values { sqlite3_finalize(s) }
        for s in statements.values { sqlite3_finalize(s) }
        sqlite3_close_v2(handle)
    }

    /// Registers `printf` and `format` on `connection`, in place of SQLite's; `self` must
    /// outlive the registration (the query connection holds both).
    func install(on connection: OpaquePointer) {
        for name in ["printf", "format"] {
            sqlite3_create_function_v2(
                connection, name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                Unmanaged.passUnretained(self).toOpaque(), checkedPrintf, nil, nil, nil)
        }
    }

    fileprivate func call(_ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
        // As SQLite's: no format, no text.
        guard argc > 0, let argv, sqlite3_value_type(argv[0]) != SQLITE_NULL else { return sqlite3_result_null(ctx) }
        guard let stmt = statement(argc) else { return sqlite3_result_error_nomem(ctx) }
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        for i in 0..<argc { sqlite3_bind_value(stmt, i + 1, argv[Int(i)]) }
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_ROW else {
            return rc & 0xff == SQLITE_NOMEM ? sqlite3_result_error_nomem(ctx) : sqlite3_result_error_toobig(ctx)
        }
        // A format gives text, if only empty; NULL means the text could not be built.
        if sqlite3_column_type(stmt, 0) == SQLITE_NULL { return sqlite3_result_error_toobig(ctx) }
        sqlite3_result_value(ctx, sqlite3_column_value(stmt, 0))
    }

    /// SQLite's own function `name()` on `argv`, its value or its error given to `ctx`; `key`
    /// (under 2^23) names it among the callers'. The arguments are bound in place, numbers as
    /// text: trim, like and glob read them as text (a number's rendering), and a copy of each
    /// was a fifth of a call.
    func builtin(
        _ name: () -> String, key: Int32, _ ctx: OpaquePointer?, _ argc: Int32,
        _ argv: UnsafeMutablePointer<OpaquePointer?>
    ) {
        let slot = key << 8 | argc
        var found = builtins[slot]
        if found == nil {
            let sql = "SELECT \(name())(" + (1...argc).map { "?\($0)" }.joined(separator: ",") + ")"
            guard sqlite3_prepare_v2(handle, sql, -1, &found, nil) == SQLITE_OK, let found else {
                sqlite3_finalize(found)
                return sqlite3_result_error_nomem(ctx)
            }
            builtins[slot] = found
        }
        guard let stmt = found else { return sqlite3_result_error_nomem(ctx) }
        defer {
            // Before `argv`, which the bindings point into, is gone.
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        for i in 0..<argc {
            let value = argv[Int(i)]
            switch sqlite3_value_type(value) {
            case SQLITE_NULL: break
            case SQLITE_BLOB:
                // Kept a blob: SQLite may be built so that LIKE and GLOB never match one.
                // An empty one has no bytes to point to (and a NULL pointer binds NULL).
                let blob = sqlite3_value_blob(value)
                let count = sqlite3_value_bytes(value)
                if let blob, count > 0 {
                    sqlite3_bind_blob(stmt, i + 1, blob, count, nil)
                } else {
                    sqlite3_bind_zeroblob(stmt, i + 1, 0)
                }
            default:
                guard let text = sqlite3_value_text(value) else { break }
                let start = UnsafeRawPointer(text).assumingMemoryBound(to: CChar.self)
                sqlite3_bind_text(stmt, i + 1, start, sqlite3_value_bytes(value), nil)
            }
        }
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_ROW else {
            switch rc & 0xff {
            case SQLITE_NOMEM: return sqlite3_result_error_nomem(ctx)
            case SQLITE_TOOBIG: return sqlite3_result_error_toobig(ctx)
            default: return sqlite3_result_error(ctx, sqlite3_errmsg(handle), -1)
            }
        }
        sqlite3_result_value(ctx, sqlite3_column_value(stmt, 0))
    }

    private func statement(_ argc: Int32) -> OpaquePointer? {
        if let s = statements[argc] { return s }
        let sql = "SELECT printf(" + (1...argc).map { "?\($0)" }.joined(separator: ",") + ")"
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            sqlite3_finalize(stmt)
            return nil
        }
        statements[argc] = stmt
        return stmt
    }
}

private let checkedPrintf: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    ctx, argc, argv in
    // The user data is the CheckedPrintf, which the query connection keeps alive.
    let printf = Unmanaged<CheckedPrintf>.fromOpaque(sqlite3_user_data(ctx)!).takeUnretainedValue()
    if printf.stopIfExpired(ctx) { return }
    printf.call(ctx, argc, argv)
}
