// Edges as the engine handles them inside a transaction: row ids plus the names of both
// ends, loaded in one join so a deleted end can still be reported by name.

import GRDB

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
        Edge(name: name, source: source, destination: destination, rules: rules,
             kind: field.map { .derived(field: $0) } ?? .manual)
    }

    static let select = """
        SELECT e.id, e.name, e.src, e.is_file, e.dst, e.rules, e.field, s.collection, s.key, d.collection, d.key, f.path
        FROM edge e JOIN object s ON s.id = e.src
        LEFT JOIN object d ON e.is_file = 0 AND d.id = e.dst
        LEFT JOIN file f ON e.is_file = 1 AND f.id = e.dst
        """

    init(row: Row) {
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
        // A cursor decodes each row in place; fetchAll would copy every row first.
        let rows = try Row.fetchCursor(db.cachedStatement(sql: select + " WHERE " + condition), arguments: arguments)
        var out = [EdgeRow]()
        while let row = try rows.next() { out.append(EdgeRow(row: row)) }
        return out
    }
}
