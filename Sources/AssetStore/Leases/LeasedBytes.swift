// The bytes an owner's leases keep from eviction and expiry: the files held by that owner's
// objects they name, and by that owner's objects holding the files they name (a file lease
// keeps its holders), each file once however many names it has. For the check of a
// non-admin's lease against its quota.

import GRDB
import JSON

extension ReadTransaction {
    /// The bytes of the distinct files held by the objects of `owner` among `objects` and
    /// among the holders of `files` (normalised paths): one query, the lists passed as JSON.
    public func leasedBytes(owner: String, objects: [ObjectRef], files: [String]) throws -> Int64 {
        let refs = JSONValue.array(objects.map { .array([.string($0.collection), .string($0.key)]) })
        let paths = JSONValue.array(files.map { .string($0) })
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
                kept(id) AS (SELECT e.dst FROM edge e JOIN held h ON h.id = e.src WHERE e.is_file = 1)
                SELECT CAST(TOTAL(f.size) - (\(Sizes.excess(where: "f.id IN kept", sharedFirst: false))) AS INTEGER)
                FROM file f WHERE f.id IN kept
                """,
            arguments: [refs.serialized(), paths.serialized(), owner]) ?? 0
    }
}
