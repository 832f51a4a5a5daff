// The SQL side of secondary indexes: table and SQLite index names qualified by the index
// name, row refresh for changed objects, and full population. All index writes go through
// here so "index equals a recomputation from the objects" (I5) has one definition.

import GRDB
import GRDBSQLite

enum IndexTable {
    static func table(_ index: String) -> String { "index_\(index)" }
    static func sqlIndex(_ index: String, _ suffix: String) -> String { "index_\(index)__\(suffix)" }
    /// A user column's SQLite index: `__c_` keeps column names apart from the fixed suffixes,
    /// and index names cannot contain `__`, so no two names meet.
    static func columnIndex(_ index: String, _ column: String) -> String { "index_\(index)__c_\(column)" }

    /// The columns a query on `index` may name, in table order.
    static func columns(of def: IndexDefinition?) -> [String] {
        guard let def else { return IndexDefinition.defaultColumns }
        return ["collection", "key"] + def.columns.map(\.name)
    }

    /// The columns of object the built-in index shows, in order (`id` as `object_id`); the
    /// query authorizer lets a clause read these through the view and no others.
    static let defaultViewColumns = [
        "id", "collection", "key", "owner", "size", "files", "created", "modified", "accessed",
    ]

    /// The built-in index's SQLite indexes on object, by name: what a new store and an
    /// upgraded one both end with (Schema.swift). The owner index carries collection and
    /// key so that a query for an owner's keys reads it alone.
    static let defaultIndexes: [(name: String, columns: [String])] = [
        defaultOwnerSize,
        (sqlIndex(IndexDefinition.defaultName, "size"), ["size"]),
        (sqlIndex(IndexDefinition.defaultName, "accessed"), ["accessed"]),
        (sqlIndex(IndexDefinition.defaultName, "created"), ["created"]),
    ]

    static let defaultOwnerSize = (
        name: sqlIndex(IndexDefinition.defaultName, "owner_size"), columns: ["owner", "size", "collection", "key"]
    )

    /// The built-in index: a view of the object rows (size and files are columns of object,
    /// kept by `refresh`), with its SQLite indexes on object under the index's names.
    static func createDefault(_ db: Database) throws {
        let columns = defaultViewColumns.map { $0 == "id" ? "id AS object_id" : $0 }.joined(separator: ", ")
        try db.execute(sql: "CREATE VIEW \"\(table(IndexDefinition.defaultName))\" AS SELECT \(columns) FROM object")
        for index in defaultIndexes { try createDefaultIndex(index, db) }
    }

    /// Makes one of `defaultIndexes`.
    static func createDefaultIndex(_ index: (name: String, columns: [String]), _ db: Database) throws {
        try db.execute(sql: "CREATE INDEX \"\(index.name)\" ON object(\(index.columns.joined(separator: ", ")))")
    }

    /// Least recently used first within one owner: the quota policy's order, kept only while
    /// a policy needs it (Store+OwnerLRU.swift).
    static let defaultOwnerAccessed = sqlIndex(IndexDefinition.defaultName, "owner_accessed")

    static func createDefaultOwnerAccessed(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX IF NOT EXISTS "\(defaultOwnerAccessed)" ON object(owner, accessed)
                """)
    }

    static func dropDefaultOwnerAccessed(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX IF EXISTS \"\(defaultOwnerAccessed)\"")
    }

    /// The default index row of objects, computed from the objects, edges and registry.
    static let defaultSelect = """
        SELECT o.id, o.collection, o.key, o.owner,
            (SELECT \(Sizes.sum("f.size")) FROM file f WHERE f.id IN (SELECT dst FROM edge WHERE src = o.id AND is_file = 1)) AS size,
            (SELECT COUNT(*) FROM file f WHERE f.id IN (SELECT dst FROM edge WHERE src = o.id AND is_file = 1)) AS files,
            o.created, o.modified, o.accessed
        FROM object o
        """

    static func sqlLiteral(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

    static func columnExpression(_ c: IndexColumn) -> String {
        let p = sqlLiteral(c.path.sqlitePath)
        switch c.type {
        case .integer:
            return "CASE json_type(o.value, \(p)) WHEN 'integer' THEN json_extract(o.value, \(p)) "
                + "WHEN 'real' THEN CAST(json_extract(o.value, \(p)) AS INTEGER) END"
        case .real:
            return "CASE json_type(o.value, \(p)) WHEN 'integer' THEN CAST(json_extract(o.value, \(p)) AS REAL) "
                + "WHEN 'real' THEN json_extract(o.value, \(p)) END"
        case .text:
            return "CASE json_type(o.value, \(p)) WHEN 'text' THEN json_extract(o.value, \(p)) END"
        case .boolean:
            return "CASE json_type(o.value, \(p)) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END"
        }
    }

    /// `SELECT object_id, collection, key, columns… FROM object` for a user index, keeping
    /// only allowed collections and rows with some non-null column.
    static func userSelect(_ def: IndexDefinition, extraCondition: String) -> String {
        let exprs = def.columns.map { columnExpression($0) + " AS \"\($0.name)\"" }.joined(separator: ", ")
        var conditions = [extraCondition]
        if let cs = def.collections {
            conditions.append("o.collection IN (\(cs.map(sqlLiteral).joined(separator: ",")))")
        }
        let notAllNull = def.columns.map { "\"\($0.name)\" IS NOT NULL" }.joined(separator: " OR ")
        return """
            SELECT * FROM (SELECT o.id, o.collection, o.key, \(exprs) FROM object o WHERE \(conditions.joined(separator: " AND ")))
            WHERE \(notAllNull)
            """
    }

    static func create(_ def: IndexDefinition, _ db: Database) throws {
        let t = table(def.name)
        let cols = def.columns.map { c -> String in
            let type = ["integer": "INTEGER", "real": "REAL", "text": "TEXT", "boolean": "INTEGER"][c.type.rawValue]!
            return "\"\(c.name)\" \(type)"
        }.joined(separator: ", ")
        try db.execute(
            sql: """
                CREATE TABLE "\(t)" (object_id INTEGER PRIMARY KEY, collection TEXT NOT NULL, key TEXT NOT NULL, \(cols))
                """)
        try db.execute(sql: "CREATE INDEX \"\(sqlIndex(def.name, "collection_key"))\" ON \"\(t)\"(collection, key)")
        for c in def.columns {
            try db.execute(sql: "CREATE INDEX \"\(columnIndex(def.name, c.name))\" ON \"\(t)\"(\"\(c.name)\")")
        }
    }

    static func drop(_ name: String, _ db: Database) throws {
        try db.execute(sql: "DROP TABLE IF EXISTS \"\(table(name))\"")
    }

    /// What a refresh knows of an object before it reads it.
    struct Standing {
        /// It has no index rows yet, and nothing is deleted for it.
        var unindexed = false
        /// New and never given a file edge, so it holds none.
        var fileless = false
        /// The figures its row was inserted with, where not 0 (HeldFiles).
        var presized: HeldFiles?
        /// `presized` is known to hold the truth: the row is not even read.
        var sized = false
    }

    /// Recomputes the rows of `ids` in every index (a missing object loses its rows), each
    /// with its `Standing` at the same position.
    /// Per object, size and count come from a plain join summed here: the correlated `IN`
    /// subqueries of `defaultSelect` build two temporary tables per row (5× slower). The
    /// object row is written only when they changed: a write rewrites the whole row, value
    /// included, and two of its SQLite indexes.
    static func refresh(
        _ ids: [Int64], _ standings: [Standing], indexes: [IndexDefinition], _ db: Database
    ) throws {
        precondition(ids.count == standings.count, "a standing for each object")
        guard !ids.isEmpty else { return }
        let files = try db.cachedStatement(
            sql: """
                SELECT e.dst, f.size FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = ? AND e.is_file = 1
                """)
        let setSize = try db.cachedStatement(
            sql: """
                UPDATE object SET size = ?2, files = ?3 WHERE id = ?1 AND (size != ?2 OR files != ?3)
                """)
        for (id, standing) in zip(ids, standings) {
            var seen = Set<Int64>()
            var size: Int64 = 0
            if standing.fileless {
                // Its row holds what it was inserted with: 0 unless its value named files
                // then (put again since, or an edge removed).
                guard standing.presized != nil else { continue }
            } else if standing.sized {
                continue
            } else {
                try files.forEachRawRow({ sqlite3_bind_int64($0, 1, id) }) { r in
                    if seen.insert(r.int64(0)).inserted { size = size.adding(saturating: r.int64(1)) }
                }
                if let held = standing.presized, held.size == size, held.files == seen.count { continue }
            }
            try setSize.executeRaw { s in
                sqlite3_bind_int64(s, 1, id)
                sqlite3_bind_int64(s, 2, size)
                sqlite3_bind_int64(s, 3, Int64(seen.count))
            }
        }
        for def in indexes {
            let del = try db.cachedStatement(sql: "DELETE FROM \"\(table(def.name))\" WHERE object_id = ?")
            let ins = try db.cachedStatement(
                sql: "INSERT INTO \"\(table(def.name))\" \(userSelect(def, extraCondition: "o.id = ?"))")
            for (id, standing) in zip(ids, standings) {
                if !standing.unindexed { try del.executeRaw { sqlite3_bind_int64($0, 1, id) } }
                try ins.executeRaw { sqlite3_bind_int64($0, 1, id) }
            }
        }
    }

    /// Removes the rows of a deleted object from every user index (its built-in row is the
    /// object's own).
    static func remove(_ id: Int64, indexes: [IndexDefinition], _ db: Database) throws {
        for def in indexes {
            try db.cachedStatement(sql: "DELETE FROM \"\(table(def.name))\" WHERE object_id = ?").execute(arguments: [
                id
            ])
        }
    }

    /// Removes the user index rows of several objects (a JSON array of ids).
    static func remove(all ids: String, indexes: [IndexDefinition], _ db: Database) throws {
        for t in indexes.map({ table($0.name) }) {
            try db.cachedStatement(sql: "DELETE FROM \"\(t)\" WHERE object_id IN (SELECT value FROM json_each(?))")
                .execute(arguments: [ids])
        }
    }

    /// Fills an index from scratch in id ranges, reporting progress after each range.
    /// For the built-in index, the objects' size and files are recomputed (the rest of its
    /// row is the object's own) and written where they differ.
    static func populate(
        name: String, def: IndexDefinition?, _ db: Database, progress: ((IndexRebuildProgress) -> Void)?
    ) throws {
        let t = table(name)
        let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") ?? 0
        let maxID = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM object") ?? 0
        let step: Int64 = 50_000
        let stmt: Statement
        if let def {
            try db.execute(sql: "DELETE FROM \"\(t)\"")
            stmt = try db.makeStatement(
                sql: "INSERT INTO \"\(t)\" \(userSelect(def, extraCondition: "o.id > ? AND o.id <= ?"))")
        } else {
            stmt = try db.makeStatement(
                sql: """
                    UPDATE object SET size = r.size, files = r.files FROM (\(defaultSelect) WHERE o.id > ? AND o.id <= ?) AS r
                    WHERE object.id = r.id AND (object.size != r.size OR object.files != r.files)
                    """)
        }
        var low: Int64 = 0
        progress?(IndexRebuildProgress(index: name, done: 0, total: total))
        while low < maxID {
            try stmt.execute(arguments: [low, low + step])
            low += step
            let done = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object WHERE id <= ?", arguments: [low]) ?? 0
            progress?(IndexRebuildProgress(index: name, done: done, total: total))
        }
    }
}
