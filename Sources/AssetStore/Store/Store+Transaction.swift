// The writer's transaction. GRDB's `inTransaction(.immediate)` compiled `BEGIN IMMEDIATE` and
// `COMMIT` afresh at every transaction (about 19,800 instructions a commit under callgrind):
// here they are prepared once, in the writer's statement cache, and still run through GRDB,
// which so sees every begin, commit and rollback as before (its commit hook, the commit
// observer, its view of the transaction).

import GRDB

extension Store {
    /// Runs `body` in an immediate transaction on the writer `db`, then commits. A body that
    /// throws, or a commit that fails, rolls back and rethrows the first error, as GRDB's
    /// `inTransaction` does. If SQLite rolled the transaction back by itself (an error the body
    /// caught: SQLITE_FULL, I/O), nothing the body ran after it may commit: the commit fails
    /// with SQLITE_ABORT, the body's raw statements check (`Statement.checkTransaction`), and
    /// the commit observer refuses a commit while `inBody` is set (a GRDB statement would run
    /// in autocommit and commit by itself; GRDB's own block guarded that).
    static func inWriterTransaction(_ db: Database, _ commits: CommitCounter, _ body: () throws -> Void) throws {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            do {
                let was = commits.inBody.exchange(true, ordering: .relaxed)
                defer { commits.inBody.store(was, ordering: .relaxed) }
                try body()
            }
            try checkNotRolledBack(db)
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
        } catch {
            // Only if SQLite has not rolled back already; the first error is the one thrown.
            try? db.rollback()
            throw error
        }
    }

    /// Fails with SQLITE_ABORT, as GRDB's transaction block made every statement fail, once
    /// SQLite has rolled the writer's transaction back by itself. Before a savepoint too, so
    /// that a part fails at once, whatever GRDB's savepoint does with no transaction open.
    static func checkNotRolledBack(_ db: Database) throws {
        guard db.isInsideTransaction else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "Transaction was aborted")
        }
    }
}
