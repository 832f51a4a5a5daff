// The database schema and its migrations. User index tables are named index_<name>, the
// built-in index is the view index_default, and nothing else starts with index_. Every id
// is AUTOINCREMENT so SQLite never reuses one (YapDatabase's #274, #453, #543 were data
// loss from reused row ids).

import GRDB

enum Schema {
    static func migrator() -> DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value ANY) WITHOUT ROWID;
                    INSERT INTO meta(key, value) VALUES ('commit', 0);
                    INSERT INTO meta(key, value) VALUES ('lease.last', 0);
                    CREATE TABLE counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;

                    CREATE TABLE object (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        collection TEXT NOT NULL,
                        key TEXT NOT NULL,
                        value TEXT NOT NULL,
                        metadata TEXT,
                        owner TEXT NOT NULL,
                        created REAL NOT NULL,
                        modified REAL NOT NULL,
                        accessed REAL NOT NULL,
                        UNIQUE (collection, key));

                    CREATE TABLE file (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        path TEXT NOT NULL UNIQUE,
                        size INTEGER NOT NULL,
                        device INTEGER,
                        inode INTEGER,
                        mtime REAL,
                        missing INTEGER NOT NULL,
                        first_seen REAL NOT NULL);

                    -- dst is an object id (is_file = 0) or a file id (is_file = 1); field is the
                    -- template field a derived edge comes from, NULL for a manual edge.
                    CREATE TABLE edge (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        name TEXT NOT NULL,
                        src INTEGER NOT NULL,
                        is_file INTEGER NOT NULL,
                        dst INTEGER NOT NULL,
                        rules INTEGER NOT NULL,
                        field TEXT);
                    CREATE UNIQUE INDEX edge_src_name_dst ON edge(src, name, is_file, dst);
                    CREATE INDEX edge_dst ON edge(is_file, dst, rules);

                    CREATE TABLE unlink_queue (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        path TEXT NOT NULL,
                        device INTEGER,
                        inode INTEGER,
                        commit_no INTEGER NOT NULL,
                        queued_at REAL NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT,
                        next_attempt REAL NOT NULL);
                    CREATE INDEX unlink_queue_due ON unlink_queue(next_attempt);

                    CREATE TABLE template (collection TEXT PRIMARY KEY, edges TEXT NOT NULL) WITHOUT ROWID;
                    CREATE TABLE secondary_index (name TEXT PRIMARY KEY, definition TEXT NOT NULL) WITHOUT ROWID;

                    CREATE TABLE "index_default" (
                        object_id INTEGER PRIMARY KEY, collection TEXT NOT NULL, key TEXT NOT NULL,
                        owner TEXT NOT NULL, size INTEGER NOT NULL, files INTEGER NOT NULL,
                        created REAL NOT NULL, modified REAL NOT NULL, accessed REAL NOT NULL);
                    CREATE INDEX "index_default__owner_size" ON "index_default"(owner, size);
                    CREATE INDEX "index_default__size" ON "index_default"(size);
                    CREATE INDEX "index_default__accessed" ON "index_default"(accessed);
                    CREATE INDEX "index_default__created" ON "index_default"(created);
                    CREATE INDEX "index_default__collection_key" ON "index_default"(collection, key);
                    """)
        }
        // Pins (object.pin, assetd(8), CONTROL PROTOCOL, Methods) live on the object so a
        // delete drops them; the queue keeps each file's size so a plan can count the
        // bytes an eviction really frees.
        m.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE object ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE unlink_queue ADD COLUMN size INTEGER;
                    """)
            // The per-owner LRU index, once made here, is kept only while a policy needs it
            // (Store+OwnerLRU.swift): open makes or drops it.
        }
        // The device numbers each root's filesystem has had (DeviceRenumbering.swift).
        m.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE root_device (
                        device INTEGER NOT NULL, fsid INTEGER NOT NULL, seen REAL NOT NULL,
                        PRIMARY KEY (device, fsid)) WITHOUT ROWID;
                    """)
        }
        // The built-in index's own columns (size, files) move onto the object row, and
        // index_default becomes a view of it: its other columns were copies, and keeping the
        // copy cost a new object a second table row, five index entries and a read-back (a
        // third of a put's SQL work). Its SQLite indexes keep their names, now on object; its
        // (collection, key) index is object's own unique one. Sizes are copied, not
        // recomputed: verify compares them with the registry as before.
        m.registerMigration("v4") { db in
            let ownerLRU =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?)",
                    arguments: [IndexTable.defaultOwnerAccessed]) ?? false
            try db.execute(
                sql: """
                    ALTER TABLE object ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE object ADD COLUMN files INTEGER NOT NULL DEFAULT 0;
                    UPDATE object SET size = d.size, files = d.files FROM "index_default" d
                        WHERE d.object_id = object.id AND (d.size != 0 OR d.files != 0);
                    DROP TABLE "index_default";
                    """)
            try IndexTable.createDefault(db)
            if ownerLRU { try IndexTable.createDefaultOwnerAccessed(db) }
        }
        // (device, inode) does not name a file for long: ext4 gives a freed inode number to
        // the next new file at once. The registry and the queue keep what tells a file from
        // a later one at its path (FileIdentity.swift); rows from before keep NULLs and are
        // judged on (device, inode) alone, as they were.
        m.registerMigration("v5") { db in
            try db.execute(
                sql: """
                    ALTER TABLE file ADD COLUMN birth INTEGER;
                    ALTER TABLE file ADD COLUMN generation INTEGER;
                    ALTER TABLE file ADD COLUMN ctime INTEGER;
                    ALTER TABLE unlink_queue ADD COLUMN birth INTEGER;
                    ALTER TABLE unlink_queue ADD COLUMN generation INTEGER;
                    ALTER TABLE unlink_queue ADD COLUMN ctime INTEGER;
                    """)
        }
        // The state of the eviction orders other than LRU (EvictionQueues.swift): each object's
        // queue, place and access count, and the ghost record of keys S3-FIFO evicted. A
        // deleted object leaves its queue with its row, whatever deleted it.
        m.registerMigration("v6") { db in
            try db.execute(
                sql: """
                    CREATE TABLE evict_queue (
                        id INTEGER PRIMARY KEY, queue INTEGER NOT NULL, seq INTEGER NOT NULL,
                        freq INTEGER NOT NULL, size INTEGER NOT NULL);
                    CREATE INDEX evict_queue_order ON evict_queue(queue, seq);
                    CREATE TABLE evict_ghost (hash INTEGER PRIMARY KEY, seq INTEGER NOT NULL, size INTEGER NOT NULL);
                    CREATE INDEX evict_ghost_seq ON evict_ghost(seq);
                    CREATE TRIGGER evict_queue_gone AFTER DELETE ON object
                        BEGIN DELETE FROM evict_queue WHERE id = old.id; END;
                    """)
        }
        // Top-100-by-size for one owner (WHERE owner = ? ORDER BY size DESC) read each object's
        // row for its collection and key: a random page an object. With both in the owner
        // index, a query that asks for keys reads the index alone. A store that passed v4
        // before that index was declared so has the old one, made again here; v4 makes the
        // declared one.
        m.registerMigration("v7") { db in
            let owner = IndexTable.defaultOwnerSize
            if try db.indexes(on: "object").first(where: { $0.name == owner.name })?.columns != owner.columns {
                try db.execute(sql: "DROP INDEX IF EXISTS \"\(owner.name)\"")
                try IndexTable.createDefaultIndex(owner, db)
            }
        }
        // A put of a new file cancels any queued unlink of its path, and `forget` and verify's
        // orphan check find queue rows by path: without an index each of them read the whole
        // queue, so a queue held by leases, failing unlinks or `files.unlink_delay` made every
        // put of a new file cost its length.
        m.registerMigration("v8") { db in
            try db.execute(sql: "CREATE INDEX unlink_queue_path ON unlink_queue(path)")
        }
        // Lease numbers are reserved in the store (LeaseNumbers.swift); a new store starts them
        // at 1 (v1). The daemons of an older store numbered leases from 1 at every start: its
        // numbers start past any one run's, so an id saved then names no new lease.
        m.registerMigration("v9") { db in
            try db.execute(sql: "INSERT OR IGNORE INTO meta(key, value) VALUES ('lease.last', 999999999999)")
        }
        // A file a non-admin named is taken, when a rule deletes it, only as far as the
        // judgement of that call covers it (FileClaim.swift).
        m.registerMigration("v10") { db in
            try db.execute(sql: "ALTER TABLE file ADD COLUMN claim TEXT")
        }
        // The budget, quotas and `stats` count a file once however many names it has (hard
        // links, a name renamed and named again): `file_shared` holds the identities more than
        // one row names (SharedFiles.swift), found here for an older store.
        m.registerMigration("v11") { db in
            try db.execute(
                sql: """
                    CREATE INDEX file_identity ON file(inode, device, size);
                    CREATE TABLE file_shared (
                        inode INTEGER NOT NULL, device INTEGER NOT NULL, PRIMARY KEY (inode, device)) WITHOUT ROWID;
                    INSERT INTO file_shared SELECT inode, device FROM file
                        WHERE inode IS NOT NULL AND device IS NOT NULL GROUP BY inode, device HAVING COUNT(*) > 1;
                    """)
        }
        // A queued file whose look ended on a transient error (EMFILE, EIO) is looked at again
        // by the sweep: what the look owes is kept here (OwedLook.text: when, by which
        // process, on which root folder, by which claim); NULL once taken.
        m.registerMigration("v12") { db in
            try db.execute(sql: "ALTER TABLE unlink_queue ADD COLUMN identify TEXT")
        }
        // The device numbers each root's filesystem has had, by root (DeviceRenumbering.swift):
        // two disks found in the other order swap numbers, which root_device cannot tell apart.
        m.registerMigration("v13") { db in
            try db.execute(
                sql: """
                    CREATE TABLE root_filesystem (
                        root TEXT NOT NULL, device INTEGER NOT NULL, fsid INTEGER NOT NULL, seen REAL NOT NULL,
                        PRIMARY KEY (root, device, fsid)) WITHOUT ROWID;
                    """)
        }
        return m
    }
}

extension Store {
    /// Brings the schema up to date. The long steps are reported as rebuilds, so the daemon
    /// logs them before its start looks hung: v4 on a database that has the old index table
    /// (a rewrite of every object with files: about 6 s per million), and v11 on a store that
    /// has a file registry (an index on every row of it, in one statement). Neither starts
    /// on a disk without the room it needs (`refuseUnlessRoom`).
    func migrate(progress: (@Sendable (IndexRebuildProgress) -> Void)?) throws {
        let migrator = Schema.migrator()
        try Store.mapErrors {
            let (objects, files, fileBytes, freeInFile) = try pool.read { db -> (Int?, Int?, Int64, Int64) in
                let applied = try migrator.appliedIdentifiers(db)
                var objects: Int?
                if try db.tableExists("index_default"), !applied.contains("v4") {
                    objects = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM object") ?? 0
                }
                var files: Int?
                if !applied.isEmpty, !applied.contains("v11") {
                    files = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM file") ?? 0
                }
                let pageSize = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
                let freePages = try Int64.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                return (objects, files, pages * pageSize, freePages * pageSize)
            }
            // Each reported as it runs: up to v10 (v4's rewrite with it), then the rest.
            let v4 = objects.map {
                IndexRebuildProgress(
                    index: IndexDefinition.defaultName + " (moved onto the object rows, once)", done: 0, total: $0)
            }
            let v11 = files.map {
                IndexRebuildProgress(
                    index: "file_identity (files counted once, schema v11)", done: 0, total: $0, unit: "files")
            }
            // The first step is reported before the room is measured: on a disk short of the
            // count's bound the measure reads every row (6 G instructions a million files,
            // more than v11's index itself: docs/DESIGN.md).
            if let first = v4 ?? v11 { progress?(first) }
            let bound =
                (objects.map { UpgradeSpace.v4Bound(objects: $0, fileBytes: fileBytes) } ?? 0)
                + (files.map { UpgradeSpace.v11Bound(files: $0) } ?? 0)
            if upgradeShort(writes: bound, freeInFile: freeInFile) != nil {
                let writes = try pool.read { db in
                    try (objects == nil ? 0 : UpgradeSpace.v4(db).bytes)
                        + (files == nil ? 0 : UpgradeSpace.v11(db).bytes)
                }
                try refuseUnlessRoom(
                    [objects.map { "v4: \($0) objects rewritten" }, files.map { "v11: an index over \($0) files" }]
                        .compactMap { $0 }.joined(separator: ", "), writes: writes, freeInFile: freeInFile)
            }
            // upTo "v10" only while v11 is not applied: GRDB stops the process on a target
            // older than an applied migration, and migrations apply in order, so none after
            // v10 is applied either.
            try migrateReporting(v4, progress, started: true) {
                if v11 != nil { try migrator.migrate(pool, upTo: "v10") } else { try migrator.migrate(pool) }
            }
            if v11 != nil { try migrateReporting(v11, progress, started: v4 == nil) { try migrator.migrate(pool) } }
        }
    }

    /// Refuses a database a newer assetd has upgraded: GRDB passes over migrations it does not
    /// know, and this binary would then write rows without what the newer schema relies on (a
    /// claim, an identity) and act on the newer one's rows by its older rules.
    func checkSchemaKnown(_ migrator: DatabaseMigrator = Schema.migrator()) throws {
        let unknown = try Store.mapErrors {
            try pool.read { db in
                try migrator.appliedIdentifiers(db).subtracting(migrator.appliedMigrations(db)).sorted()
            }
        }
        guard !unknown.isEmpty else { return }
        throw StoreError(
            .conflict,
            "\(path) was upgraded by a newer assetd (schema \(unknown.joined(separator: ", ")), unknown to this"
                + " one): not opened. Run that version, or restore a backup this version made",
            detail: ["newer_schema": true])
    }

    /// Refuses a long upgrade the database's disk has no room for, before it starts: it would
    /// take the reserve and fail all the same, leaving a disk with no reserve and a daemon
    /// that fails every start the same way (assetd(8), FULL DISK). What it writes goes once
    /// into the WAL and once into the database file at the checkpoint (less the file's free
    /// pages); the reserve is not counted.
    private func refuseUnlessRoom(_ what: String, writes: Int64, freeInFile: Int64) throws {
        guard let (needed, free) = upgradeShort(writes: writes, freeInFile: freeInFile) else { return }
        let mib = { (bytes: Int64) in "\((bytes + (1 << 20) - 1) >> 20) MiB" }
        throw StoreError(
            .storageFull,
            "the schema upgrade (\(what)) needs about \(mib(needed)) free on the disk holding \(path),"
                + " which has \(mib(free)) (the reserve not counted): not started; make room there and start again",
            detail: ["upgrade_needs": .int(needed), "free": .int(free)])
    }

    /// The bytes an upgrade writing `writes` needs and the disk's free, if it has less.
    private func upgradeShort(writes: Int64, freeInFile: Int64) -> (needed: Int64, free: Int64)? {
        let needed = writes + max(0, writes - freeInFile)
        guard needed > 0, let free = reserve.writable, free < needed else { return nil }
        return (needed, free)
    }

    /// True for the refusal of an upgrade the disk has no room for (`refuseUnlessRoom`): an
    /// admin's to fix, as a config error is.
    public static func isUpgradeRefusal(_ error: StoreError) -> Bool {
        error.code == .storageFull && error.detail?["upgrade_needs"] != nil
    }

    /// Runs `body` (a schema upgrade) between reports of `step`'s start (unless `started`:
    /// reported before the room was measured) and end, if any.
    private func migrateReporting(
        _ step: IndexRebuildProgress?, _ progress: (@Sendable (IndexRebuildProgress) -> Void)?,
        started: Bool, _ body: () throws -> Void
    ) throws {
        if let step, !started { progress?(step) }
        // A schema upgrade on a full disk (ALTER TABLEs write pages to the WAL) goes through
        // the reserve, as the open does: a daemon that cannot start cannot free space.
        try freeingSpace("the schema upgrade") { try Store.mapErrors { try body() } }
        if var step {
            step.done = step.total
            progress?(step)
        }
    }
}
