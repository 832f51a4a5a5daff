// A root that holds the database (assetd(8), "Managed roots"). Everything below a root is a
// file a client may name: the database, its WAL, its reserve and its backups there could be
// registered and unlinked like any other file (by anyone, without enforce_ownership), and
// verify --delete-orphans would take another daemon's database for orphans.

import Foundation

extension RootHygiene {
    /// Why `root` is refused because the folder of the database at `storePath` is at or below
    /// it, or nil. Compared resolved where both resolve (symlinks followed), else as written.
    static func holdsStore(_ root: String, storePath: String) -> String? {
        let folder = (lexical(storePath) as NSString).deletingLastPathComponent
        let r = resolve(root) ?? lexical(root)
        let f = resolve(folder) ?? lexical(folder)
        // By bytes, as every path here: as Strings, "/" and a combining mark are one character.
        let below = Array((r == "/" ? "/" : r + "/").utf8)
        guard f.utf8.elementsEqual(r.utf8) || Array(f.utf8).starts(with: below) else { return nil }
        return "\(root) holds the database's folder \(folder): a client could name the database or its "
            + "write-ahead log as a file and have it unlinked; put store.path outside every root"
    }
}
