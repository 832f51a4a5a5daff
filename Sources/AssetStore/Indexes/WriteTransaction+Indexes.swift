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
        unindexed = []  // populated with every object, this transaction's too
        presized = [:]
        try IndexTable.populate(name: def.name, def: def, db, progress: progress)
    }

    /// Rebuilds an index (the built-in one too) from the objects.
    public func rebuildIndex(_ name: String, progress: (@Sendable (IndexRebuildProgress) -> Void)? = nil) throws {
        guard name == IndexDefinition.defaultName || indexes[name] != nil else {
            throw StoreError(.notFound, "no index \"\(name)\"")
        }
        unindexed = []
        presized = [:]  // the built-in index's rebuild writes sizes
        try IndexTable.populate(name: name, def: indexes[name], db, progress: progress)
    }
}
