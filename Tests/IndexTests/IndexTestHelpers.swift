// Shared helpers for the index tests: reading a whole index back, recomputing what it should hold
// from the objects alone (which every index must equal), and checking that a refused query left the
// store as it was. Everything goes through the public API or a separate read-only SQLite handle.

import Foundation
import GRDB
import Synchronization
import Testing
import AssetStore
import AssetStoreTestSupport

/// Every row of an index as `[ref: columns]` (collection and key folded into the ref).
func indexContents(
    _ store: Store, index: String = IndexDefinition.defaultName
) throws -> [ObjectRef: [String: JSONValue]] {
    let rows = try store.query(index: index, clause: "WHERE 1", include: .rows)
    var out = [ObjectRef: [String: JSONValue]]()
    for row in rows {
        #expect(out[row.ref] == nil, "index \(index) holds \(row.ref) twice")
        out[row.ref] = row.columns ?? [:]
    }
    return out
}

/// The `default` row an object should have, computed from what `get` returns: its owner, the
/// bytes and count of the distinct files it holds, and its timestamps. Files are told apart by
/// their paths' bytes, as the registry does (equal Strings may name two files).
func expectedDefaultRow(_ object: StoredObject) -> [String: JSONValue] {
    let distinct = Dictionary(object.files.map { (Array($0.path.utf8), $0.size) }, uniquingKeysWith: { a, _ in a })
    return [
        "owner": .string(object.owner),
        "size": .int(distinct.values.reduce(0, +)),
        "files": .int(Int64(distinct.count)),
        "created": .double(object.created),
        "modified": .double(object.modified),
        "accessed": .double(object.accessed),
    ]
}

/// What a user index column holds for a value: the JSON value at its path if it has the
/// column's type (a JSON integer widens to real; booleans are 0/1), else NULL.
func expectedColumn(_ column: IndexColumn, in value: JSONValue) -> JSONValue {
    let v = column.path.value(in: value)
    switch (column.type, v) {
    case (.integer, .int(let i)?): return .int(i)
    case (.real, .int(let i)?): return .double(Double(i))
    case (.real, .double(let d)?): return .double(d)
    case (.text, .string(let s)?): return .string(s)
    case (.boolean, .bool(let b)?): return .int(b ? 1 : 0)
    default: return .null
    }
}

/// The user index row an object should have, or nil (other collection, or every column null).
func expectedUserRow(_ def: IndexDefinition, _ object: StoredObject) -> [String: JSONValue]? {
    if let allowed = def.collections, !allowed.contains(object.ref.collection) { return nil }
    var row = [String: JSONValue]()
    for c in def.columns { row[c.name] = expectedColumn(c, in: object.value) }
    return row.values.allSatisfy(\.isNull) ? nil : row
}

/// The differences between each index and a recomputation from the objects among
/// `universe` that exist (I5); empty when the indexes tell the truth.
func indexDifferences(
    _ store: Store, universe: some Sequence<ObjectRef>, userIndexes: [IndexDefinition] = []
) throws -> [String] {
    let objects = try store.read { r in try universe.compactMap { try r.get($0) } }
    let total = try store.read { try $0.objectCount() }
    var out = [String]()
    if objects.count != total { out.append("the test's universe misses \(total - objects.count) objects") }

    var expectedDefault = [ObjectRef: [String: JSONValue]]()
    for o in objects { expectedDefault[o.ref] = expectedDefaultRow(o) }
    out += rowDifferences(try indexContents(store), expectedDefault, index: "default")

    for def in userIndexes {
        var expected = [ObjectRef: [String: JSONValue]]()
        for o in objects { expected[o.ref] = expectedUserRow(def, o) }
        out += rowDifferences(try indexContents(store, index: def.name), expected, index: def.name)
    }
    return out
}

/// Expects no differences (I5), naming the step in the failure.
func expectIndexTruth(
    _ store: Store, universe: some Sequence<ObjectRef>, userIndexes: [IndexDefinition] = [],
    _ step: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let differences = try indexDifferences(store, universe: universe, userIndexes: userIndexes)
    #expect(differences.isEmpty, "\(step):\n\(differences.joined(separator: "\n"))", sourceLocation: sourceLocation)
}

private func rowDifferences(
    _ actual: [ObjectRef: [String: JSONValue]], _ expected: [ObjectRef: [String: JSONValue]], index: String
) -> [String] {
    var out = [String]()
    for ref in Set(actual.keys).subtracting(expected.keys).sorted() {
        out.append("index \(index) has a row for \(ref), which is deleted or not indexable")
    }
    for ref in Set(expected.keys).subtracting(actual.keys).sorted() {
        out.append("index \(index) lacks a row for \(ref)")
    }
    for (ref, want) in expected.sorted(by: { $0.key < $1.key }) {
        if let got = actual[ref], got != want {
            out.append("index \(index) row of \(ref) is \(JSONValue.object(got)), recomputed \(JSONValue.object(want))")
        }
    }
    return out
}

/// A read-only GRDB handle on the store's file, for looking at sqlite_master.
func schemaNames(_ dbPath: String, type: String) throws -> Set<String> {
    var config = Configuration()
    config.readonly = true
    let q = try DatabaseQueue(path: dbPath, configuration: config)
    defer { try? q.close() }
    return try q.read { db in
        Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = ?", arguments: [type]))
    }
}

/// What a refused query must not change, taken before and compared after.
struct StoreSnapshot: Equatable {
    var objects: Int
    var defaultRows: [ObjectRef: [String: JSONValue]]
    var tables: Set<String>

    init(_ f: Fixture) throws {
        objects = try f.store.read { try $0.objectCount() }
        defaultRows = try indexContents(f.store)
        tables = try schemaNames(f.dbPath, type: "table")
    }
}

/// Words of the engine's own statements that an error message must never show.
let ownSQLWords = ["SELECT", "FROM", "GROUP", "EXPLAIN", "index_", "object_id"]

/// Those of `ownSQLWords` that `message` contains but the client's own text does not.
func leakedSQL(_ message: String, clientText: String) -> [String] {
    ownSQLWords.filter { message.contains($0) && !clientText.contains($0) }
}

/// Collects progress reports from a rebuild (the callback is @Sendable).
final class ProgressLog: Sendable {
    private let reports = Mutex<[IndexRebuildProgress]>([])
    var all: [IndexRebuildProgress] { reports.withLock { $0 } }
    var callback: @Sendable (IndexRebuildProgress) -> Void { { p in self.reports.withLock { $0.append(p) } } }
}

/// A column with a path that parses (tests write only valid paths).
func column(_ name: String, _ type: IndexColumnType, _ path: String) -> IndexColumn {
    IndexColumn(name: name, type: type, path: JSONPath(path)!)  // literal paths in tests are valid
}

/// Puts one object in its own transaction.
func put(_ f: Fixture, _ r: ObjectRef, _ value: JSONValue, owner: String? = nil) throws {
    try f.store.write { tx in try tx.put(r, value: value, owner: owner) }
}

/// Keys of a query result, in result order.
func keys(_ rows: [IndexRow]) -> [String] { rows.map(\.ref.key) }
