// The files an object.get lists, read one of two ways. On the daemon's loop a few edges at
// most are read (`FileReading.onLoop`): most objects hold none or a few files, and their read
// stays as cheap as before, while an object with more edges than that is handed to the pool
// (PointReadOffLoop) before anything is recorded: a user may add edges without bound, and
// rendering 400,000 of them held every client for seconds. Elsewhere (`.whole`) every file is
// read once, in path order, from SQLite's sort of the distinct files, and the read stops with
// reply_too_large as soon as the files alone would pass the reply limit (docs/PROTOCOL.md,
// object.get).

import GRDB
import GRDBSQLite
import JSON

/// How a point read reads an object's files.
public enum FileReading: Sendable {
    /// On the daemon's loop: at most `Store.loopFileEdges` file edges are read; an object with
    /// more throws ``PointReadOffLoop``.
    case onLoop
    /// Every file, once each, read off the loop; files that alone would make the reply larger
    /// than `replyLimit` bytes throw reply_too_large (`Int.max`: no bound).
    case whole(replyLimit: Int)
}

/// Thrown by a point read on the loop for an object with more file edges than the loop reads:
/// nothing was recorded, and the caller reads it again off the loop (`FileReading.whole`).
public struct PointReadOffLoop: Error {}

/// An object's files, read before its text is written.
enum FileList {
    /// One entry a file edge, sorted by path: a file held through two edges comes twice, side
    /// by side.
    case edges([(path: [UInt8], json: [UInt8])])
    /// The files' text, once each in path order, comma-separated.
    case text([UInt8])

    /// Appends the files' text (without brackets).
    func append(to out: inout [UInt8]) {
        switch self {
        case .edges(let files):
            var last: [UInt8]?
            for file in files where file.path != last {
                if last != nil { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: file.json)
                last = file.path
            }
        case .text(let text):
            out.append(contentsOf: text)
        }
    }
}

extension Store {
    /// At most this many file edges of one object are read on the daemon's loop
    /// (docs/PROTOCOL.md, object.get): an object with more is read on the pool.
    public static let loopFileEdges = 64

    /// The files an object holds, one row an edge (a file held through two edges comes twice),
    /// one more than the loop reads at most: the columns `Reads.fileRecord` takes, then the
    /// file's id. Not ordered: sorting the few files in Swift spares SQLite a temporary b-tree.
    static let loopFilesSQL: StaticString = """
        SELECT path, size, device, inode, mtime, missing, first_seen, f.id
        FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1 LIMIT 65
        """

    /// The files an object holds, once each (however many edges hold each one), in path byte
    /// order (SQLite's BINARY collation compares bytes), at most `?2` of them (-1: all); the
    /// same columns. SQLite gathers the distinct ids from the object's edges, seeks each file,
    /// and sorts only the first `?2` by path: its memory follows the files, not the edges.
    static let distinctFilesSQL: StaticString = """
        SELECT path, size, device, inode, mtime, missing, first_seen, id FROM file
        WHERE id IN (SELECT dst FROM edge WHERE src = ?1 AND is_file = 1) ORDER BY path LIMIT ?2
        """

    /// Fewer bytes than any file's text takes in a reply (89 at least: every member, each as
    /// short as it gets), so that a limit of rows made from it never cuts a list that fits.
    static let fileTextMinimum = 64

    /// Object `id`'s files (`count` of them, from its row), read as `reading` says. `around`
    /// is less than the rest of the object's text takes: with it, files that would make the
    /// reply pass the limit are refused.
    static func fileList(
        _ id: Int64, _ count: Int64, on conn: QueryConnection, _ reading: FileReading, around: Int
    ) throws -> FileList {
        switch reading {
        case .onLoop:
            guard count <= loopFileEdges else { throw PointReadOffLoop() }
            return .edges(try loopFiles(id, on: conn))
        case .whole(let replyLimit):
            let room = replyLimit == .max ? Int.max : replyLimit - around
            return .text(try distinctFiles(id, on: conn, room: room, replyLimit: replyLimit))
        }
    }

    /// At most `loopFileEdges` file edges of object `id`, sorted by path; throws
    /// PointReadOffLoop if it has more.
    private static func loopFiles(_ id: Int64, on conn: QueryConnection) throws -> [(path: [UInt8], json: [UInt8])] {
        let s = try conn.cached(Store.loopFilesSQL)
        defer { sqlite3_reset(s) }
        sqlite3_bind_int64(s, 1, id)
        var files: [(path: [UInt8], json: [UInt8])] = []
        var rc = sqlite3_step(s)
        while rc == SQLITE_ROW {
            guard files.count < loopFileEdges else { throw PointReadOffLoop() }
            let path = UnsafeBufferPointer(start: sqlite3_column_text(s, 0), count: Int(sqlite3_column_bytes(s, 0)))
            var json: [UInt8] = []
            fileJSON(s, path, &json)
            files.append((Array(path), json))
            rc = sqlite3_step(s)
        }
        guard rc == SQLITE_DONE else { throw conn.failure(rc) }
        files.sort { $0.path.lexicographicallyPrecedes($1.path) }
        return files
    }

    /// Every file of object `id` once, in path order, as text; throws reply_too_large (of
    /// `replyLimit`) once the text passes `room` bytes, having read at most one file more than fit.
    private static func distinctFiles(
        _ id: Int64, on conn: QueryConnection, room: Int, replyLimit: Int
    ) throws -> [UInt8] {
        guard room > 0 else { throw StoreError.replyTooLarge(replyLimit) }
        let s = try conn.cached(Store.distinctFilesSQL)
        defer { sqlite3_reset(s) }
        sqlite3_bind_int64(s, 1, id)
        // Past this many rows the text is longer than `room`: SQLite's sort keeps no more.
        sqlite3_bind_int64(s, 2, room == .max ? -1 : Int64(room / fileTextMinimum + 1))
        var text: [UInt8] = []
        var rc = sqlite3_step(s)
        while rc == SQLITE_ROW {
            if !text.isEmpty { text.append(UInt8(ascii: ",")) }
            let path = UnsafeBufferPointer(start: sqlite3_column_text(s, 0), count: Int(sqlite3_column_bytes(s, 0)))
            fileJSON(s, path, &text)
            if text.count > room { throw StoreError.replyTooLarge(replyLimit) }
            rc = sqlite3_step(s)
        }
        guard rc == SQLITE_DONE else { throw conn.failure(rc) }
        return text
    }

    /// A file row of `loopFilesSQL` or `distinctFilesSQL` as `StoredObject.json` prints it.
    private static func fileJSON(_ s: OpaquePointer, _ path: UnsafeBufferPointer<UInt8>, _ json: inout [UInt8]) {
        literal(#"{"device":"#, &json); number(s, 2, double: false, &json)
        literal(#","first_seen":"#, &json); number(s, 6, double: true, &json)
        literal(#","inode":"#, &json); number(s, 3, double: false, &json)
        literal(#","missing":"#, &json)
        json.append(contentsOf: (sqlite3_column_int64(s, 5) != 0 ? "true" : "false").utf8)
        literal(#","mtime":"#, &json); number(s, 4, double: true, &json)
        literal(#","path":"#, &json); JSONValue.writeString(String(decoding: path, as: UTF8.self), to: &json)
        literal(#","size":"#, &json); number(s, 1, double: false, &json)
        json.append(UInt8(ascii: "}"))
    }
}
