// The bound on what SQLite allocates for one client's statement (query_memory.c): the values a
// clause makes, its sorts and groups in memory, and the pages it reads in.

extension QueryConnection {
    /// Values of the length limit one client's statement may hold at once. A stored value of
    /// 15 MB compared, replaced and printed in one row held eight of its length (120 MB), and
    /// upper-cased and matched with LIKE as well, ten (150 MB): each read of a long column is
    /// a copy of its own, and printf binds a copy, builds its text and returns a copy.
    static let valuesInMemory = 8
    /// Beside them: the page cache (8 MiB), the temporary database's (2 MB) and a sorter's list
    /// in memory (about the page cache's size), each bounded on its own.
    static let memoryBeside = 32 << 20

    /// The bytes one client's statement may hold (docs/PERFORMANCE.md, Index queries, 0.15
    /// round).
    static func memoryBound(lengthLimit: Int) -> Int {
        let values = lengthLimit.multipliedReportingOverflow(by: valuesInMemory)
        let total = values.partialValue.addingReportingOverflow(memoryBeside)
        return values.overflow || total.overflow ? .max : total.partialValue
    }

    /// Why client queries are refused, if SQLite initialized itself with another allocator than
    /// the counting one (something in the process configured it first): without it their
    /// memory cannot be bounded. Read after SQLite has initialized (a database is open).
    static var unboundedMemory: String? {
        countingAllocatorInstalled
            ? nil
            : "client queries are refused: SQLite was initialized with another allocator than assetd's "
                + "counting one, so their memory cannot be bounded"
    }

    /// Runs `body` with what SQLite allocates on this thread charged to the connection's
    /// account, counted from zero.
    func chargingMemory<T>(_ body: () throws -> T) rethrows -> T {
        guard memory != nil else { return try body() }
        let previous = beginMemoryCount()
        defer { endMemoryCount(previous) }
        return try body()
    }

    /// The refusal for a statement's failure `rc`, if the memory bound caused it: SQLITE_NOMEM
    /// after an allocation was refused (an I/O error that ran out of memory among them).
    func memoryRefusal(_ rc: Int32) -> StoreError? {
        guard Self.mayComeFromRefusal(rc), tookMemoryRefusal(), let memoryLimit else {
            return nil
        }
        return StoreError(
            .queryRejected,
            "the query needed more than \(memoryLimit) bytes of memory (\(Self.valuesInMemory) values of "
                + "control.max_reply_bytes and \(Self.memoryBeside >> 20) MiB): make fewer or shorter values")
    }
}
