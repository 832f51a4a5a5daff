// The write transaction's index definitions: defining a user index (a changed definition is
// rebuilt at once) and rebuilding one from the objects.

import GRDB

extension WriteTransaction {
    /// Defines (or redefines) a user index; a changed definition is rebuilt now.
    public func defineIndex(_ def: IndexDefinition, progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil) throws
    {
        try def.validate()
        if indexes[def.name] == def { return }
        try IndexTable.drop(def.name, db)
        try IndexTable.create(def, db)
        try db.execute(
            sql: "INSERT OR REPLACE INTO secondary_index (name, definition) VALUES (?, ?)",
            arguments: [def.name, def.json.serialized()])
        indexes[def.name] = def
        forgetInsertedRows()  // populated with every object, this transaction's too
        try IndexTable.populate(name: def.name, def: def, db, progress: progress)
    }

    /// Rebuilds an index (the built-in one too) from the objects.
    public func rebuildIndex(_ name: String, progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil) throws {
        guard name == IndexDefinition.defaultName || indexes[name] != nil else {
            throw StoreError(.notFound, "no index \"\(name)\"")
        }
        forgetInsertedRows()  // the built-in index's rebuild writes sizes
        try IndexTable.populate(name: name, def: indexes[name], db, progress: progress)
    }

    /// Every row was written: no inserted object is unindexed or holds the figures it was
    /// inserted with any more.
    private func forgetInsertedRows() {
        inserted = inserted.mapValues { InsertedObject(neverDerived: $0.neverDerived, unindexed: false) }
    }
}
