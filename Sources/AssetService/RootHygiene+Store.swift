// A root that holds the database, the socket or the config file (assetd(8), "Managed roots").
// Everything below a root is a file a client may name: the database, its WAL, its reserve and
// its backups there could be registered and unlinked like any other file (by anyone, without
// enforce_ownership), and verify --delete-orphans would take another daemon's database, or
// the config file, for orphans. Judged on paths (symlinks resolved) and on the file system,
// where a bind mount shows a folder of a root at a path outside it (MountTable.swift).

import AssetStore
import Foundation

/// What no root may hold: the database's folder, the socket's folder, the config file.
struct KeptFromRoots {
    /// For messages: "the database's folder".
    var what: String
    /// The folder or file.
    var path: String
    /// What would go wrong, and what to do.
    var why: String
}

extension DaemonConfig {
    /// The folders and files of assetd's own that must lie outside every root.
    var keptFromRoots: [KeptFromRoots] {
        let folder = { (file: String) in (RootHygiene.lexical(file) as NSString).deletingLastPathComponent }
        var out = [
            KeptFromRoots(
                what: "the database's folder", path: folder(storePath),
                why: "a client could name the database or its write-ahead log as a file and have it unlinked; "
                    + "put store.path outside every root"),
            KeptFromRoots(
                what: "the control socket's folder",
                path: folder(socketPath),
                why: "everything below a root is the clients' to name and the orphan pass's to judge; "
                    + "put control.socket outside every root"),
        ]
        // store.path may itself be a symlink to a database elsewhere: its real folder too, the
        // link's own target when that does not exist yet (SQLite follows it and makes it).
        var real = Store.realName(storePath)
        var st = stat()
        if lstat(storePath, &st) == 0, st.st_mode & S_IFMT == S_IFLNK,
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: storePath)
        {
            real = target.hasPrefix("/") ? target : folder(storePath) + "/" + target
        }
        let realFolder = folder(real)
        if !realFolder.utf8.elementsEqual(folder(storePath).utf8) {
            out.append(
                KeptFromRoots(
                    what: "the database's folder (store.path through a symbolic link)", path: realFolder,
                    why: out[0].why))
        }
        if let sourcePath {
            out.append(
                KeptFromRoots(
                    what: "the config file", path: sourcePath,
                    why: "a client could name it as a file and have it unlinked, and verify --delete-orphans "
                        + "would remove it; keep the config file outside every root"))
        }
        return out
    }
}

extension RootHygiene {
    /// Why `root` is refused because `kept` is at or below it, or nil: compared resolved where
    /// both resolve (symlinks followed), else as written; then, with `table`, on the file
    /// system, where a bind mount of a folder of the root elsewhere holds it.
    static func holds(_ root: String, _ kept: KeptFromRoots, table: MountTable?) -> String? {
        let r = resolve(root) ?? lexical(root)
        let f = resolve(kept.path) ?? lexical(kept.path)
        // By bytes, as every path here: as Strings, "/" and a combining mark are one character.
        let below = Array((r == "/" ? "/" : r + "/").utf8)
        if f.utf8.elementsEqual(r.utf8) || Array(f.utf8).starts(with: below) {
            return "\(root) holds \(kept.what) \(kept.path): \(kept.why)"
        }
        guard let table, let inRoot = table.place(of: root), let at = table.place(of: kept.path), inRoot.holds(at)
        else { return nil }
        return "\(root) holds \(kept.what) \(kept.path) through a bind mount: \(kept.path) is \(at.description) "
            + "and \(root) is \(inRoot.description) (/proc/self/mountinfo); \(kept.why)"
    }
}
