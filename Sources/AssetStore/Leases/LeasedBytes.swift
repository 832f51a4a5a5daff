// The bytes an owner's leases keep from eviction and expiry: the files held by that owner's
// objects they name, and by that owner's objects holding the files they name (a file lease
// keeps its holders), each file once however many names it has. For the check of a
// non-admin's lease against its quota, and of a write that can grow what its leases keep,
// counted with the write's files in place of its objects' current ones (LeaseGrowth).

import GRDB
import JSON

extension ReadTransaction {
    /// The bytes of the distinct files held by the objects of `owner` among `objects` and
    /// among the holders of `files` (normalised paths): one query, the lists passed as JSON.
    /// The derived file edges of `replaced` are left out, and `added` (paths and sizes) counted
    /// in, each unless a file counted already has its path.
    public func leasedBytes(
        owner: String, objects: [ObjectRef], files: [String], replaced: [ObjectRef] = [],
        added: [(path: String, size: Int64)] = []
    ) throws -> Int64 {
        func refs(_ objects: [ObjectRef]) -> String {
            JSONValue.array(objects.map { .array([.string($0.collection), .string($0.key)]) }).serialized()
        }
        let paths = JSONValue.array(files.map { .string($0) })
        let sized = JSONValue.array(added.map { .array([.string($0.path), .int($0.size)]) })
        return try Int64.fetchOne(
            db,
            sql: """
                WITH held(id) AS (
                    SELECT o.id FROM json_each(?1) j JOIN object o
                        ON o.collection = json_extract(j.value, '$[0]') AND o.key = json_extract(j.value, '$[1]')
                        WHERE o.owner = ?3
                    UNION
                    SELECT e.src FROM json_each(?2) j JOIN file f ON f.path = j.value
                        JOIN edge e ON e.is_file = 1 AND e.dst = f.id JOIN object o ON o.id = e.src
                        WHERE o.owner = ?3),
                replaced(id) AS (
                    SELECT o.id FROM json_each(?4) j JOIN object o
                        ON o.collection = json_extract(j.value, '$[0]') AND o.key = json_extract(j.value, '$[1]')),
                kept(id) AS (
                    SELECT e.dst FROM edge e JOIN held h ON h.id = e.src
                        WHERE e.is_file = 1 AND (e.field IS NULL OR e.src NOT IN replaced))
                SELECT CAST(TOTAL(f.size) - (\(Sizes.excess(where: "f.id IN kept", sharedFirst: false))) AS INTEGER)
                    + (SELECT CAST(TOTAL(json_extract(a.value, '$[1]')) AS INTEGER) FROM json_each(?5) a
                        WHERE json_extract(a.value, '$[0]') NOT IN (SELECT k.path FROM file k WHERE k.id IN kept))
                FROM file f WHERE f.id IN kept
                """,
            arguments: [refs(objects), paths.serialized(), owner, refs(replaced), sized.serialized()]) ?? 0
    }
}

extension Store {
    /// `leasedBytes` of `owner`'s leases (`objects`, `files`) as `growth` would leave them,
    /// its files probed first, outside the snapshot, as a put for `check` probes them.
    public func leasedBytes(
        owner: String, objects: [ObjectRef], files: [String], growth: LeaseGrowth, check: FileReferenceCheck?
    ) throws -> Int64 {
        let added = probedSizes(growth.files, check: check)
        return try read { tx in
            try tx.leasedBytes(
                owner: owner, objects: objects + growth.objects, files: files, replaced: growth.replaced, added: added)
        }
    }
}
