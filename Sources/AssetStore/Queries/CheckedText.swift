// instr, replace, trim, ltrim, rtrim, like and glob for clients' clauses. The query time limit is
// checked between the steps of a statement, and SQLite's own of these can spend hours in one
// step on values near the length limit: instr and replace compare at every position, trim
// compares each character with each of its set, LIKE and GLOB backtrack. instr and replace here
// search with glibc's memmem, whose time is linear in its inputs; the others refuse inputs whose
// lengths multiplied pass a budget, and otherwise run SQLite's own (through CheckedPrintf's
// private connection), so they answer exactly as SQLite's do.

import GRDBSQLite
import Glibc

enum CheckedText {
    /// The functions run as SQLite's own once their inputs are within `workBudget`.
    enum Function: Int32 { case trim, ltrim, rtrim, like, glob }

    /// Bytes of one input times bytes of the other that one call of trim, LIKE or GLOB may take
    /// on: at most about a quarter of a second of one core (docs/PERFORMANCE.md).
    static let workBudget = 1 << 27

    /// The longest LIKE or GLOB pattern on query connections (SQLite's default is 50,000).
    static let patternLimit: Int32 = 10_000

    /// Whether SQLite's LIKE and GLOB never match a blob (a compile-time option).
    static let likeSkipsBlobs = sqlite3_compileoption_used("LIKE_DOESNT_MATCH_BLOBS") != 0

    /// What a refusal's message starts with (QueryText.describe passes it on).
    static let refusal = "too much work in one call of "

    /// Registers the functions on `connection` in place of SQLite's; `printf` runs SQLite's
    /// own and must outlive the registration (the query connection holds both).
    static func install(on connection: OpaquePointer, printf: CheckedPrintf) {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        let data = Unmanaged.passUnretained(printf).toOpaque()
        sqlite3_create_function_v2(connection, "instr", 2, flags, data, checkedInstr, nil, nil, nil)
        sqlite3_create_function_v2(connection, "replace", 3, flags, data, checkedReplace, nil, nil, nil)
        // trim with one argument trims spaces only, in linear time: SQLite's stays.
        let guarded: [(String, Int32, SQLiteFunction)] = [
            ("trim", 2, checkedTrim), ("ltrim", 2, checkedLtrim), ("rtrim", 2, checkedRtrim),
            ("like", 2, checkedLike), ("like", 3, checkedLike), ("glob", 2, checkedGlob),
        ]
        for (name, argc, function) in guarded {
            sqlite3_create_function_v2(connection, name, argc, flags, data, function, nil, nil, nil)
        }
        sqlite3_limit(connection, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, patternLimit)
    }

    /// True when the running query is past its time and the call has ended it.
    static func stopped(_ ctx: OpaquePointer?) -> Bool {
        Unmanaged<CheckedPrintf>.fromOpaque(sqlite3_user_data(ctx)!).takeUnretainedValue().stopIfExpired(ctx)
    }

    /// SQLite's own `function` on `argv` once the lengths of its first two inputs multiplied
    /// are within the budget; an error otherwise.
    fileprivate static func guarded(
        _ function: Function, _ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        let printf = Unmanaged<CheckedPrintf>.fromOpaque(sqlite3_user_data(ctx)!).takeUnretainedValue()
        if printf.stopIfExpired(ctx) { return }
        guard let argv, argc >= 2 else { return sqlite3_result_null(ctx) }
        // SQLite's LIKE and GLOB built so (Debian's are) answer 0 for a blob on either side
        // before reading anything, its length or the escape: no work to bound.
        if function == .like || function == .glob, likeSkipsBlobs,
            sqlite3_value_type(argv[0]) == SQLITE_BLOB || sqlite3_value_type(argv[1]) == SQLITE_BLOB
        {
            return sqlite3_result_int(ctx, 0)
        }
        // The bytes each reads (a number's as text, as SQLite's reads it); NULL has none.
        let work = Int(sqlite3_value_bytes(argv[0])) * Int(sqlite3_value_bytes(argv[1]))
        guard work <= workBudget else {
            return sqlite3_result_error(ctx, "\(refusal)\(function): its inputs are too long (ask for less)", -1)
        }
        printf.builtin({ String(describing: function) }, key: function.rawValue, ctx, argc, argv)
    }

    /// The bytes of `value` as instr reads them: text, from a copy for a blob read as text.
    fileprivate static func bytes(
        _ value: OpaquePointer?, asText: Bool, copies: inout [OpaquePointer]
    ) -> UnsafeRawBufferPointer? {
        var v = value
        if asText, sqlite3_value_type(value) == SQLITE_BLOB {
            guard let copy = sqlite3_value_dup(value) else { return nil }
            copies.append(copy)
            v = copy
        }
        let start = asText ? UnsafeRawPointer(sqlite3_value_text(v)) : sqlite3_value_blob(v)
        let count = Int(sqlite3_value_bytes(v))
        if count == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard let start else { return nil }
        return UnsafeRawBufferPointer(start: start, count: count)
    }
}

typealias SQLiteFunction = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void

private typealias Memmem = @convention(c) (UnsafeRawPointer?, Int, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?

/// glibc's memmem (two-way for long needles: linear), which the Glibc module does not export.
/// dlsym with no handle is RTLD_DEFAULT.
private let memmem = unsafeBitCast(dlsym(nil, "memmem")!, to: Memmem.self)

private func chars(_ p: UnsafePointer<UInt8>) -> UnsafePointer<CChar> {
    UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self)
}

private func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }

/// instr(X, Y) as SQLite's: NULL if either is; 1 for an empty Y; bytes when both are blobs,
/// else characters of UTF-8 text, where only a character's first byte starts a match.
private let checkedInstr: SQLiteFunction = { ctx, _, argv in
    if CheckedText.stopped(ctx) { return }
    guard let argv else { return sqlite3_result_null(ctx) }
    let types = (sqlite3_value_type(argv[0]), sqlite3_value_type(argv[1]))
    if types.0 == SQLITE_NULL || types.1 == SQLITE_NULL { return sqlite3_result_null(ctx) }
    let asText = !(types.0 == SQLITE_BLOB && types.1 == SQLITE_BLOB)
    var copies = [OpaquePointer]()
    defer { copies.forEach { sqlite3_value_free($0) } }
    guard let haystack = CheckedText.bytes(argv[0], asText: asText, copies: &copies),
        let needle = CheckedText.bytes(argv[1], asText: asText, copies: &copies)
    else { return sqlite3_result_error_nomem(ctx) }
    guard let first = needle.first else { return sqlite3_result_int(ctx, 1) }
    var position: Int64 = 0
    if needle.count <= haystack.count {
        if asText && isContinuation(first) {
            // SQLite's steps a character at a time from the first byte: only there can a
            // needle that starts inside a character match.
            if memcmp(haystack.baseAddress!, needle.baseAddress!, needle.count) == 0 { position = 1 }
        } else if let found = memmem(haystack.baseAddress, haystack.count, needle.baseAddress, needle.count) {
            let offset = found - UnsafeMutableRawPointer(mutating: haystack.baseAddress!)
            var n = 1
            if asText {
                for byte in haystack[1..<(offset + 1)] where !isContinuation(byte) { n += 1 }
            } else {
                n += offset
            }
            position = Int64(n)
        }
    }
    sqlite3_result_int64(ctx, position)
}

/// replace(X, Y, Z) as SQLite's: NULL if any is; X as text for an empty Y (or one starting with
/// a zero byte); each Y, left to right without overlap, replaced by Z, byte by byte.
private let checkedReplace: SQLiteFunction = { ctx, _, argv in
    if CheckedText.stopped(ctx) { return }
    guard let argv, let text = sqlite3_value_text(argv[0]) else { return sqlite3_result_null(ctx) }
    let textCount = Int(sqlite3_value_bytes(argv[0]))
    guard let pattern = sqlite3_value_text(argv[1]) else { return sqlite3_result_null(ctx) }
    if pattern[0] == 0 {
        return sqlite3_result_text64(ctx, chars(text), UInt64(textCount), sqliteTransient, UInt8(SQLITE_UTF8))
    }
    let patternCount = Int(sqlite3_value_bytes(argv[1]))
    guard let with = sqlite3_value_text(argv[2]) else { return sqlite3_result_null(ctx) }
    let withCount = Int(sqlite3_value_bytes(argv[2]))
    // The matches are searched twice, to count them and then to copy: keeping their offsets
    // took 8 bytes a match, eight times the text for a one-byte pattern, where this call's
    // memory is its output.
    func eachMatch(_ body: (Int) -> Void) {
        var from = 0
        while patternCount <= textCount - from, let found = memmem(text + from, textCount - from, pattern, patternCount)
        {
            let offset = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - text
            body(offset)
            from = offset + patternCount
        }
    }
    var matches = 0
    eachMatch { _ in matches += 1 }
    let count = textCount + matches * (withCount - patternCount)
    let limit = Int(sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1))
    guard count <= limit else { return sqlite3_result_error_toobig(ctx) }
    guard let out = sqlite3_malloc64(UInt64(count + 1))?.assumingMemoryBound(to: UInt8.self) else {
        return sqlite3_result_error_nomem(ctx)
    }
    var read = 0
    var written = 0
    eachMatch { offset in
        memcpy(out + written, text + read, offset - read)
        written += offset - read
        memcpy(out + written, with, withCount)
        written += withCount
        read = offset + patternCount
    }
    memcpy(out + written, text + read, textCount - read)
    sqlite3_result_text64(ctx, chars(out), UInt64(count), sqlite3_free, UInt8(SQLITE_UTF8))
}

private let checkedTrim: SQLiteFunction = { CheckedText.guarded(.trim, $0, $1, $2) }
private let checkedLtrim: SQLiteFunction = { CheckedText.guarded(.ltrim, $0, $1, $2) }
private let checkedRtrim: SQLiteFunction = { CheckedText.guarded(.rtrim, $0, $1, $2) }
private let checkedLike: SQLiteFunction = { CheckedText.guarded(.like, $0, $1, $2) }
private let checkedGlob: SQLiteFunction = { CheckedText.guarded(.glob, $0, $1, $2) }
