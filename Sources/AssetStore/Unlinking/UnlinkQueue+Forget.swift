// Dropping queued unlinks by hand: for rows that can never succeed (a filesystem gone for
// good, a folder the daemon will never be allowed to write), which the sweep would otherwise
// retry hourly forever. The files stay on disk; nothing will remove them.

import GRDB
import JSON

extension Store {
    /// Drops the queued unlinks of `paths` (normalised, compared as bytes) without unlinking
    /// anything, and counts them (`forgotten`). Returns the paths whose rows went, in queue
    /// order; a path with no row is not an error.
    public func forgetQueued(_ paths: [String]) throws -> [String] {
        try checkWritable()
        // Any absolute path: a row may be outside the roots now (a root removed from the config).
        let normal = try paths.map { p throws(StoreError) in JSONValue.string(try ManagedRoots.normalise(p)) }
        guard !normal.isEmpty else { return [] }
        return try freeingSpace("forgetting queued unlinks") {
            try Store.mapErrors {
                try pool.write { db in
                    let gone = try String.fetchAll(
                        db,
                        sql: "DELETE FROM unlink_queue WHERE path IN (SELECT value FROM json_each(?)) RETURNING path",
                        arguments: [JSONValue.array(normal).serialized()])
                    if !gone.isEmpty { try Store.bump(db, "forgotten", by: Int64(gone.count)) }
                    return gone
                }
            }
        }
    }
}
