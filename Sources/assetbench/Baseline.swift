// The baseline: the same logical work as the engine, written directly on the SQLite C API —
// the engine's tables and indexes (copied from the engine's own database), WAL with
// synchronous=FULL, 1,000 objects per transaction, every statement prepared once and reused.
// It must stay the best straightforward way to do the work: never slow it down. A put
// identifies its file as the engine must (docs/PERFORMANCE.md, "Store put and delete, 0.7
// round"): found with openat2 beneath the root, no symlink followed and no mount crossed,
// statx-ed and asked its inode generation, the same C function the engine calls.

import CFileIdentity
import Glibc
import GRDBSQLite

/// SQLITE_TRANSIENT is a C macro (a cast of -1) that Swift does not import.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement, bound, stepped and reset again and again.
final class CStatement {
    let handle: OpaquePointer

    init(_ db: OpaquePointer, _ sql: String) {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &s, nil)
        // Our own SQL: failing to compile is a bug.
        precondition(rc == SQLITE_OK && s != nil, "prepare (\(rc)) \(String(cString: sqlite3_errmsg(db))): \(sql)")
        handle = s!  // checked just above
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds parameter `i` (from 1).
    func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(handle, i, v) }
    /// Binds parameter `i` (from 1).
    func bind(_ i: Int32, _ v: Double) { sqlite3_bind_double(handle, i, v) }
    /// Binds parameter `i` (from 1); SQLite copies the text.
    func bind(_ i: Int32, _ v: String) { sqlite3_bind_text(handle, i, v, -1, transient) }
    /// Binds parameter `i` (from 1), NULL for nil.
    func bind(_ i: Int32, _ v: Int64?) {
        if let v { sqlite3_bind_int64(handle, i, v) } else { sqlite3_bind_null(handle, i) }
    }

    /// One step: true on a row, false when done.
    func step() -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        precondition(rc == SQLITE_DONE, "step (\(rc)) \(String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))))")
        return false
    }

    /// Steps to the end and resets.
    func run() {
        while step() {}
        sqlite3_reset(handle)
    }

    /// Makes the statement ready to run again (bindings stay).
    func reset() { sqlite3_reset(handle) }

    /// Column `i` (from 0) of the current row.
    func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }
    /// Column `i` (from 0) of the current row.
    func double(_ i: Int32) -> Double { sqlite3_column_double(handle, i) }
    /// True if column `i` (from 0) of the current row is NULL.
    func isNull(_ i: Int32) -> Bool { sqlite3_column_type(handle, i) == SQLITE_NULL }
    /// Column `i` (from 0) of the current row as text ("" for NULL).
    func text(_ i: Int32) -> String {
        guard let p = sqlite3_column_text(handle, i) else { return "" }
        return String(cString: p)
    }
}

/// A registry row as the baseline's get returns it.
struct BaselineFile {
    var path: String
    var size: Int64
    var device: Int64?
    var inode: Int64?
    var mtime: Double?
    var missing: Bool
    var firstSeen: Double
}

/// A file as the baseline's put identifies it.
private struct ProbedFile {
    nonisolated(unsafe) static var warned = false
    var size: Int64
    var device: Int64
    var inode: Int64
    var mtime: Double
    var birth: Int64?
    var generation: Int64?
    var ctime: Int64

    /// The regular file at `path`, whose first `rootLength` bytes name its root, reached
    /// beneath the root without a symlink or a mount on the way.
    init(_ path: String, rootLength: Int) throws {
        var p = assetd_file_probe()
        if assetd_probe_beneath(path, rootLength, nil, &p) != Int32(ASSETD_PROBE_FILE) {
            // No openat2 (a kernel before 5.6, or valgrind, whose callgrind counts this
            // round's instructions): statx and the generation without the checks beneath the
            // root, said on stderr.
            guard assetd_file_stat(AT_FDCWD, path, &p.stat) == 0, (p.stat.mode & S_IFMT) == S_IFREG else {
                throw BenchError("\(path) is not a regular file reached beneath its root")
            }
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 {
                p.has_generation = assetd_file_generation(fd, &p.generation) == 0 ? 1 : 0
                close(fd)
            }
            if !ProbedFile.warned {
                ProbedFile.warned = true
                printError(
                    "assetbench: openat2 failed: the baseline's puts statx their files without the checks beneath the root"
                )
            }
        }
        let s = p.stat
        size = s.size
        device = Int64(bitPattern: s.device)
        inode = Int64(bitPattern: s.inode)
        mtime = Double(s.mtime_sec) + Double(s.mtime_nsec) / 1e9
        birth = s.has_birth != 0 ? s.birth_ns : nil
        generation = p.has_generation != 0 ? Int64(p.generation) : nil
        ctime = s.ctime_ns
    }
}

/// An object as the baseline's get returns it (value and metadata as stored text).
struct BaselineObject {
    var id: Int64
    var value: String
    var metadata: String?
    var owner: String
    var created: Double
    var modified: Double
    var accessed: Double
    var files: [BaselineFile]
}

/// One SQLite connection doing the engine's work by hand.
final class BaselineStore {
    /// WAL and FULL sync as the engine; and a 1 GiB map, as the engine had before it gave its
    /// map up to bound its RSS (the baseline has no memory goal to meet). The durable put's
    /// baseline (PutBaseline.swift) opens with the same.
    static let pragmas = ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA mmap_size = 1073741824"]

    private let db: OpaquePointer

    /// The engine's tables, indexes and views, as the engine made them in the database at
    /// `enginePath`, and the commit counter's row: both sides work on the same schema.
    static func schema(copiedFrom enginePath: String) -> String {
        var h: OpaquePointer?
        let rc = sqlite3_open_v2(enginePath, &h, SQLITE_OPEN_READONLY, "unix")
        precondition(rc == SQLITE_OK && h != nil, "cannot open \(enginePath) (\(rc))")
        defer { sqlite3_close_v2(h) }  // v2: waits for the statement below to be finalized
        let s = CStatement(
            h!,
            """
            SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite%' ORDER BY rowid
            """)  // h!: checked above; rowid order creates each table before its indexes and views
        var out = ""
        while s.step() { out += s.text(0) + ";\n" }
        return out + "INSERT INTO meta(key, value) VALUES ('commit', 0);\n"
    }

    // Transactions and the commit number (every write transaction gets the next one).
    private let begin, commit, nextCommit: CStatement
    // Put.
    private let insertObject, findFile, insertFile, noteShared, unqueueFile, refreshFile, insertEdge: CStatement
    // Get.
    private let getObject: CStatement
    // Delete.
    // Each row is read, then deleted by a plain DELETE: in SQLite 3.40 a `DELETE … RETURNING`
    // gathers its rows in an ephemeral table first, which cost more than a SELECT.
    private let findObject, deleteObject, readOutgoing, deleteOutgoing, readIncoming, deleteIncoming: CStatement
    private let countRetainers, readFileRow, deleteFileRow, dropShared, readFileEdges, deleteFileEdges: CStatement
    private let anyShared, enqueueUnlink: CStatement
    /// The identities of the file rows a delete's transaction dropped, looked at before its commit.
    private var left = [(inode: Int64, device: Int64)]()
    // Index queries: the SQL the engine compiles for the same calls.
    private let top100Query, sumByOwnerQuery: CStatement

    /// Opens a new database at `path` and makes `schema` in it.
    init(path: String, schema: String) {
        var h: OpaquePointer?
        // SQLite's own VFS, "unix": the engine's WAL write coalescing (a VFS the Store makes
        // the process's default) is not the straightforward way.
        let rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, "unix")
        precondition(rc == SQLITE_OK && h != nil, "cannot open \(path) (\(rc))")
        db = h!  // checked above
        for sql in BaselineStore.pragmas + [schema] {
            let rc = sqlite3_exec(db, sql, nil, nil, nil)
            precondition(rc == SQLITE_OK, "\(String(cString: sqlite3_errmsg(db))): \(sql)")
        }
        begin = CStatement(db, "BEGIN IMMEDIATE")
        commit = CStatement(db, "COMMIT")
        nextCommit = CStatement(db, "UPDATE meta SET value = value + 1 WHERE key = 'commit' RETURNING value")

        // The object's size is known before its row is written: its index columns go in with it.
        insertObject = CStatement(
            db,
            """
            INSERT INTO object (collection, key, value, metadata, owner, created, modified, accessed, size, files)
            VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, 1)
            """)
        // Looked up, then inserted or refreshed: an upsert `RETURNING id` pays an ephemeral table.
        findFile = CStatement(db, "SELECT id FROM file WHERE path = ?")
        insertFile = CStatement(
            db,
            """
            INSERT INTO file (path, size, device, inode, mtime, missing, first_seen, birth, generation, ctime)
            VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
            """)
        // A file another row names too (a hard link) is listed, so totals count it once.
        noteShared = CStatement(
            db,
            """
            INSERT OR IGNORE INTO file_shared (inode, device) SELECT ?1, ?2
                WHERE EXISTS (SELECT 1 FROM file WHERE inode = ?1 AND device = ?2 AND id <> ?3)
            """)
        // A path taken again cancels its queued unlink, or the sweep would remove a file held
        // again (the same file, so its identity matches).
        unqueueFile = CStatement(db, "DELETE FROM unlink_queue WHERE path = ?")
        refreshFile = CStatement(
            db,
            """
            UPDATE file SET size = ?, device = ?, inode = ?, mtime = ?, missing = 0, birth = ?, generation = ?, ctime = ?
            WHERE id = ?
            """)
        insertEdge = CStatement(
            db,
            """
            INSERT INTO edge (name, src, is_file, dst, rules, field) VALUES ('file', ?, 1, ?, 32, 'file')
            """)

        getObject = CStatement(
            db,
            """
            SELECT o.id, o.value, o.metadata, o.owner, o.created, o.modified, o.accessed,
                f.path, f.size, f.device, f.inode, f.mtime, f.missing, f.first_seen
            FROM object o
            LEFT JOIN edge e ON e.src = o.id AND e.is_file = 1
            LEFT JOIN file f ON f.id = e.dst
            WHERE o.collection = ? AND o.key = ?
            ORDER BY f.path
            """)

        findObject = CStatement(db, "SELECT id FROM object WHERE collection = ? AND key = ?")
        deleteObject = CStatement(db, "DELETE FROM object WHERE id = ?")
        readOutgoing = CStatement(db, "SELECT is_file, dst, rules FROM edge WHERE src = ?")
        deleteOutgoing = CStatement(db, "DELETE FROM edge WHERE src = ?")
        readIncoming = CStatement(db, "SELECT src, rules FROM edge WHERE is_file = 0 AND dst = ?")
        deleteIncoming = CStatement(db, "DELETE FROM edge WHERE is_file = 0 AND dst = ?")
        countRetainers = CStatement(db, "SELECT COUNT(*) FROM edge WHERE is_file = 1 AND dst = ? AND rules & 32 != 0")
        readFileRow = CStatement(
            db, "SELECT path, device, inode, size, birth, generation, ctime FROM file WHERE id = ?")
        deleteFileRow = CStatement(db, "DELETE FROM file WHERE id = ?")
        // The engine's look at commit for the files whose rows went: one left with fewer than
        // two names leaves the list (asked only while any is listed, for more than one file).
        anyShared = CStatement(db, "SELECT EXISTS (SELECT 1 FROM file_shared)")
        dropShared = CStatement(
            db,
            """
            DELETE FROM file_shared AS s WHERE s.inode = ?1 AND s.device = ?2
                AND (SELECT COUNT(*) FROM (SELECT 1 FROM file f WHERE f.inode = s.inode AND f.device = s.device LIMIT 2)) < 2
            """)
        readFileEdges = CStatement(db, "SELECT src, rules FROM edge WHERE is_file = 1 AND dst = ?")
        deleteFileEdges = CStatement(db, "DELETE FROM edge WHERE is_file = 1 AND dst = ?")
        enqueueUnlink = CStatement(
            db,
            """
            INSERT INTO unlink_queue (path, device, inode, size, birth, generation, ctime, commit_no, queued_at, next_attempt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)

        // The two columns it returns, as the engine's query for keys asks for no more.
        top100Query = CStatement(
            db, "SELECT collection, key FROM \"index_default\" WHERE owner = ? ORDER BY size DESC LIMIT 100")
        sumByOwnerQuery = CStatement(db, "SELECT \"owner\", SUM(size) FROM \"index_default\" GROUP BY \"owner\"")
    }

    /// Finalizes the statements (when `self` goes) and closes the connection after them.
    deinit { sqlite3_close_v2(db) }

    /// BEGIN IMMEDIATE, the next commit number, `body`, COMMIT.
    private func transaction(_ body: (_ commitNo: Int64, _ now: Double) throws -> Void) rethrows {
        begin.run()
        precondition(nextCommit.step(), "meta has its commit row")
        let commitNo = nextCommit.int64(0)
        nextCommit.run()
        try body(commitNo, wallClock())
        commit.run()
    }

    // MARK: put

    /// Puts objects `range` in one transaction; object i holds `path(i)`, below `root`. Per
    /// object: the file identified beneath the root (`ProbedFile`), the object row (with its
    /// index columns), the file row (refreshed, or inserted and its queued unlink cancelled),
    /// the edge.
    func put(_ range: Range<Int>, keys: [String], owners: [String], root: String, path: (Int) -> String) throws {
        let rootLength = root.utf8.count
        try transaction { _, now in
            for i in range {
                let file = path(i)
                let owner = owners[i % owners.count]
                let probed = try ProbedFile(file, rootLength: rootLength)
                let size = probed.size

                insertObject.bind(1, Bench.collection)
                insertObject.bind(2, keys[i])
                insertObject.bind(3, "{\"file\":\"\(file)\",\"owner\":\"\(owner)\"}")
                insertObject.bind(4, owner)
                insertObject.bind(5, now)
                insertObject.bind(6, now)
                insertObject.bind(7, now)
                insertObject.bind(8, size)
                insertObject.run()
                let id = sqlite3_last_insert_rowid(db)

                findFile.bind(1, file)
                let fileID: Int64
                if findFile.step() {
                    fileID = findFile.int64(0)
                    findFile.reset()
                    refreshFile.bind(1, size)
                    refreshFile.bind(2, probed.device)
                    refreshFile.bind(3, probed.inode)
                    refreshFile.bind(4, probed.mtime)
                    refreshFile.bind(5, probed.birth)
                    refreshFile.bind(6, probed.generation)
                    refreshFile.bind(7, probed.ctime)
                    refreshFile.bind(8, fileID)
                    refreshFile.run()
                } else {
                    findFile.reset()
                    insertFile.bind(1, file)
                    insertFile.bind(2, size)
                    insertFile.bind(3, probed.device)
                    insertFile.bind(4, probed.inode)
                    insertFile.bind(5, probed.mtime)
                    insertFile.bind(6, now)
                    insertFile.bind(7, probed.birth)
                    insertFile.bind(8, probed.generation)
                    insertFile.bind(9, probed.ctime)
                    insertFile.run()
                    fileID = sqlite3_last_insert_rowid(db)
                    noteShared.bind(1, probed.inode)
                    noteShared.bind(2, probed.device)
                    noteShared.bind(3, fileID)
                    noteShared.run()
                    unqueueFile.bind(1, file)
                    unqueueFile.run()
                }

                insertEdge.bind(1, id)
                insertEdge.bind(2, fileID)
                insertEdge.run()
            }
        }
    }

    // MARK: get

    /// The object with its files, in one statement (one implicit read transaction).
    func get(_ key: String) -> BaselineObject? {
        let s = getObject
        s.bind(1, Bench.collection)
        s.bind(2, key)
        defer { s.reset() }
        guard s.step() else { return nil }
        var object = BaselineObject(
            id: s.int64(0), value: s.text(1), metadata: s.isNull(2) ? nil : s.text(2), owner: s.text(3),
            created: s.double(4), modified: s.double(5), accessed: s.double(6), files: [])
        repeat {
            if !s.isNull(7) {
                object.files.append(
                    BaselineFile(
                        path: s.text(7), size: s.int64(8), device: s.isNull(9) ? nil : s.int64(9),
                        inode: s.isNull(10) ? nil : s.int64(10), mtime: s.isNull(11) ? nil : s.double(11),
                        missing: s.int64(12) != 0, firstSeen: s.double(13)))
            }
        } while s.step()
        return object
    }

    // MARK: index queries

    /// (collection, key) of the 100 largest objects of `owner`.
    func top100(owner: String) -> [(String, String)] {
        var out = [(String, String)]()
        let s = top100Query
        s.bind(1, owner)
        while s.step() { out.append((s.text(0), s.text(1))) }
        s.reset()
        return out
    }

    /// (owner, SUM(size)) per owner.
    func sumByOwner() -> [(String, Int64)] {
        var out = [(String, Int64)]()
        let s = sumByOwnerQuery
        while s.step() { out.append((s.text(0), s.int64(1))) }
        s.reset()
        return out
    }

    // MARK: delete

    /// Deletes objects `range` in one transaction. Per object: its row (index row included), its
    /// edges both ways; per file edge that retains its file (or deletes it with the source),
    /// the retaining edges left are counted and at zero the file row goes, the other edges to
    /// it go, and the file joins the unlink queue. Returns the files queued.
    ///
    /// The data set holds only built-in `file` edges, so no incoming edge fires a rule and the
    /// cascade stops there; the statements that would find such edges still run.
    func delete(_ range: Range<Int>, keys: [String]) throws -> Int {
        var queued = 0
        var fileEdges = [(dst: Int64, rules: Int64)]()
        try transaction { commitNo, now in
            for i in range {
                findObject.bind(1, Bench.collection)
                findObject.bind(2, keys[i])
                guard findObject.step() else { throw BenchError("no object \(keys[i])") }
                let id = findObject.int64(0)
                findObject.reset()
                deleteObject.bind(1, id)
                deleteObject.run()

                fileEdges.removeAll(keepingCapacity: true)
                readOutgoing.bind(1, id)
                var outgoing = false
                while readOutgoing.step() {
                    outgoing = true
                    if readOutgoing.int64(0) != 0 {
                        fileEdges.append((readOutgoing.int64(1), readOutgoing.int64(2)))
                    }
                }
                readOutgoing.reset()
                if outgoing {
                    deleteOutgoing.bind(1, id)
                    deleteOutgoing.run()
                }
                // Edges into the object would fire their rules here; each is read, then all go.
                readIncoming.bind(1, id)
                let incoming = readIncoming.step()
                readIncoming.reset()
                if incoming {
                    deleteIncoming.bind(1, id)
                    deleteIncoming.run()
                }

                for e in fileEdges {
                    var goes = e.rules & 8 != 0
                    if !goes, e.rules & 32 != 0 {
                        countRetainers.bind(1, e.dst)
                        precondition(countRetainers.step(), "COUNT returns a row")
                        goes = countRetainers.int64(0) == 0
                        countRetainers.reset()
                    }
                    if goes, deleteFile(e.dst, commitNo: commitNo, now: now) { queued += 1 }
                }
            }
            dropLeftShared()
        }
        return queued
    }

    /// The engine's `dropLeftShared`.
    private func dropLeftShared() {
        guard !left.isEmpty else { return }
        defer { left.removeAll(keepingCapacity: true) }
        if left.count > 1 {
            precondition(anyShared.step(), "EXISTS returns a row")
            let any = anyShared.int64(0) != 0
            anyShared.reset()
            guard any else { return }
        }
        for (inode, device) in left {
            dropShared.bind(1, inode)
            dropShared.bind(2, device)
            dropShared.run()
        }
    }

    /// Drops a file's registry row and remaining edges, and queues its unlink.
    private func deleteFile(_ id: Int64, commitNo: Int64, now: Double) -> Bool {
        readFileRow.bind(1, id)
        guard readFileRow.step() else {
            readFileRow.reset()
            return false
        }
        let path = readFileRow.text(0)
        let device: Int64? = readFileRow.isNull(1) ? nil : readFileRow.int64(1)
        let inode: Int64? = readFileRow.isNull(2) ? nil : readFileRow.int64(2)
        let size = readFileRow.int64(3)
        let birth: Int64? = readFileRow.isNull(4) ? nil : readFileRow.int64(4)
        let generation: Int64? = readFileRow.isNull(5) ? nil : readFileRow.int64(5)
        let ctime: Int64? = readFileRow.isNull(6) ? nil : readFileRow.int64(6)
        readFileRow.reset()
        deleteFileRow.bind(1, id)
        deleteFileRow.run()
        if let inode, let device { left.append((inode, device)) }

        readFileEdges.bind(1, id)
        let edges = readFileEdges.step()
        readFileEdges.reset()
        if edges {
            deleteFileEdges.bind(1, id)
            deleteFileEdges.run()
        }

        enqueueUnlink.bind(1, path)
        enqueueUnlink.bind(2, device)
        enqueueUnlink.bind(3, inode)
        enqueueUnlink.bind(4, size)
        enqueueUnlink.bind(5, birth)
        enqueueUnlink.bind(6, generation)
        enqueueUnlink.bind(7, ctime)
        enqueueUnlink.bind(8, commitNo)
        enqueueUnlink.bind(9, now)
        enqueueUnlink.bind(10, now)
        enqueueUnlink.run()
        return true
    }

    // MARK: checks

    /// `SELECT COUNT(*) FROM <table>`.
    func count(_ table: String) -> Int {
        let s = CStatement(db, "SELECT COUNT(*) FROM \(table)")
        precondition(s.step(), "COUNT returns a row")
        return Int(s.int64(0))
    }
}

/// The unlink baseline: `unlinkat` in a tight loop, one open folder at a time.
enum UnlinkLoop {
    /// Unlinks the files of `files` in `range` (whole folders); returns how many went.
    static func run(_ files: FileSet, _ range: Range<Int>) -> Int {
        precondition(range.lowerBound % FileSet.perFolder == 0, "whole folders")
        var removed = 0
        var i = range.lowerBound
        while i < range.upperBound {
            let folder = files.folders[i / FileSet.perFolder]
            let dirfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            precondition(dirfd >= 0, "open \(folder): \(String(cString: strerror(errno)))")
            let end = min(i + FileSet.perFolder, range.upperBound)
            while i < end {
                if unlinkat(dirfd, files.names[i], 0) == 0 { removed += 1 }
                i += 1
            }
            close(dirfd)
        }
        return removed
    }
}
