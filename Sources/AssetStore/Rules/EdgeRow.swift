// Edges as the engine handles them inside a transaction: row ids plus the names of both
// ends, loaded in one join so a deleted end can still be reported by name.

import GRDB
import Synchronization

struct EdgeRow: Hashable {
    var id: Int64
    var name: String
    var src: Int64
    var isFile: Bool
    var dst: Int64
    var rules: DeleteRules
    var field: String?
    var source: ObjectRef
    var destination: EdgeEnd

    var edge: Edge {
        Edge(
            name: name, source: source, destination: destination, rules: rules,
            kind: field.map { .derived(field: $0) } ?? .manual)
    }

    static let select = selectColumns + "\n" + joins
    /// `select`'s columns, which `init(raw:)` reads; a caller may add some after them.
    static let selectColumns = columns()
    /// `selectColumns` with other expressions for the source's names (two) or the
    /// destination's (three), for a query that has them already or joins other tables.
    static func columns(
        source: String = "s.collection, s.key", destination: String = "d.collection, d.key, f.path"
    )
        -> String
    {
        "SELECT e.id, e.name, e.src, e.is_file, e.dst, e.rules, e.field, \(source), \(destination)"
    }
    /// `select`'s tables: `f` is a file destination's registry row.
    static let joins = """
        FROM edge e JOIN object s ON s.id = e.src
        \(destinationJoins)
        """
    /// The destination's row, `d` an object's or `f` a file's. The kind picks the id to seek:
    /// SQLite seeks a rowid named in the ON clause before it tests the clause's other terms,
    /// so `e.is_file = 0 AND d.id = e.dst` would look each file's id up among the objects.
    /// A NULL rowid is not sought.
    static let destinationJoins = """
        LEFT JOIN object d ON d.id = iif(e.is_file = 0, e.dst, NULL)
        LEFT JOIN file f ON f.id = iif(e.is_file = 1, e.dst, NULL)
        """

    init(raw r: RawRow) {
        #if DEBUG
        EdgeRowsRead.count.add(1, ordering: .relaxed)
        #endif
        id = r.int64(0)
        name = r.text(1) ?? ""
        src = r.int64(2)
        isFile = r.int64(3) != 0
        dst = r.int64(4)
        rules = DeleteRules(rawValue: Int(r.int64(5)))
        field = r.text(6)
        source = ObjectRef(r.text(7) ?? "", r.text(8) ?? "")
        if isFile {
            destination = .file(r.text(11) ?? "")
        } else {
            destination = .object(ObjectRef(r.text(9) ?? "", r.text(10) ?? ""))
        }
    }

    init(row: Row) {
        #if DEBUG
        EdgeRowsRead.count.add(1, ordering: .relaxed)
        #endif
        id = row[0]
        name = row[1]
        src = row[2]
        isFile = row[3]
        dst = row[4]
        rules = DeleteRules(rawValue: row[5])
        field = row[6]
        source = ObjectRef(row[7], row[8])
        if isFile {
            destination = .file(row[11] ?? "")
        } else {
            destination = .object(ObjectRef(row[9] ?? "", row[10] ?? ""))
        }
    }

    static func fetch(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [EdgeRow] {
        var out = [EdgeRow]()
        try db.cachedStatement(sql: select + " WHERE " + condition).forEachRawRow(arguments) { r in
            out.append(EdgeRow(raw: r))
        }
        return out
    }
}

#if DEBUG
/// Debug builds only: the edge rows this process has read, for assetd's debug counts in
/// `stats`: a test sees how many edges a reply read before it stopped.
public enum EdgeRowsRead {
    static let count = Atomic<Int>(0)
    /// Rows read so far.
    public static var value: Int { count.load(ordering: .relaxed) }
}
#endif
