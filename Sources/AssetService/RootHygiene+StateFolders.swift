// The folders of the database and the socket. assetd runs as root and makes files there
// (`<db>.lock`, the ballast, `-wal`, `-shm`, the socket): a user who may add or replace entries
// in such a folder could plant a symlink for it to write through, or a `-wal` whose frames
// the open writes back into the database (queued unlinks of other users' files among them),
// or replace the socket. So each must be a folder of root's or assetd's user's that nobody
// else may write, sticky or not, on a way nobody else can replace (as a root's is judged).

import AssetStore
import Foundation

extension DaemonConfig {
    /// Refuses (a configuration error, exit 78) a `store.path` or `control.socket` whose
    /// folder another user than root and `uid` could write or replace. A folder not made yet
    /// is judged by the nearest existing one, which it will be made in.
    /// Refuses too a database with a second name (a hard link): the store would refuse to
    /// open it at every restart until an admin removes the name.
    public func checkStateFolders(uid: UInt32 = getuid()) throws(ConfigError) {
        if let why = Store.otherNames(Store.realName(storePath)) {
            throw ConfigError(file: sourcePath ?? "(embedded defaults)", line: nil, key: "store.path", message: why)
        }
        for (key, path) in [("store.path", storePath), ("control.socket", socketPath)] {
            if let why = RootHygiene.unsafeHome(of: path, uid: uid) {
                throw ConfigError(
                    file: sourcePath ?? "(embedded defaults)", line: nil, key: key,
                    message: "\(path): \(why)")
            }
        }
    }
}

extension DaemonConfig {
    /// Refuses (a configuration error, exit 78; on SIGHUP the running settings stay) a
    /// configuration file that another user than root and `uid` could change, or replace
    /// through its folder: it names the admins, the roots and the database, so whoever may
    /// write it could make itself an admin at the next reload, or point root at any folder at
    /// the next start. The file and its real path are judged as a database's folder is.
    public func checkConfigFile(uid: UInt32 = getuid()) throws(ConfigError) {
        guard let file = sourcePath, let why = RootHygiene.changeable(file, uid: uid) else { return }
        throw ConfigError(
            file: file, line: nil, key: nil,
            message: why + ": whoever may change it could make itself an admin or name any folder as a root")
    }
}

extension RootHygiene {
    /// Why another user than root and `uid` could change the existing file at `path`, one
    /// assetd only reads (its config, the subuid file), or nil. Its way is judged as a root's:
    /// folders owned by root or `uid`, writable by others only if sticky, and then its entry
    /// root's or `uid`'s, symlinks followed (NixOS keeps configs in the sticky, group-writable
    /// /nix/store); the file itself owned by one of them and not writable by group or others.
    static func changeable(_ path: String, uid: UInt32) -> String? {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        if let why = replaceable(absolute, uid: uid) { return why }
        var st = stat()
        guard stat(absolute, &st) == 0 else { return nil }  // gone since it was read
        if st.st_uid != 0 && st.st_uid != uid {
            return "\(path) belongs to user \(st.st_uid); give it to root or assetd's user"
        }
        if st.st_mode & 0o002 != 0 || (st.st_mode & 0o020 != 0 && !isPrivateGroup(st.st_gid, st.st_uid)) {
            let mode = String(st.st_mode & 0o7777, radix: 8)
            return "\(path) is writable by its group or others (mode \(mode)); chmod go-w \(path)"
        }
        return nil
    }

    /// Why the folder that holds (or will hold) `file` lets another user than root and `uid`
    /// make or replace entries in it, or nil.
    static func unsafeHome(
        of file: String, uid: UInt32, privateGroup: (gid_t, uid_t) -> Bool = RootHygiene.isPrivateGroup
    ) -> String? {
        var folder = URL(fileURLWithPath: file).standardizedFileURL.deletingLastPathComponent().path
        var st = stat()
        while stat(folder, &st) != 0 {
            guard errno == ENOENT, folder != "/" else {
                return "its folder \(folder) cannot be looked at (\(String(cString: strerror(errno))))"
            }
            folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        }
        if folder != "/", let why = replaceable(folder, uid: uid, privateGroup: privateGroup) {
            return "its folder " + why
        }
        let mode = String(st.st_mode & 0o7777, radix: 8)
        if st.st_uid != 0 && st.st_uid != uid {
            return "its folder \(folder) belongs to user \(st.st_uid), who may add or replace files in it;"
                + " give it to root or assetd's user, or choose another folder"
        }
        let groupIsOwner = st.st_mode & 0o002 == 0 && privateGroup(st.st_gid, st.st_uid)
        if st.st_mode & 0o002 != 0 || (st.st_mode & 0o020 != 0 && !groupIsOwner) {
            return "its folder \(folder) is writable by its group or others (mode \(mode)), who may add"
                + " files assetd would write through or read back; chmod go-w \(folder), or choose another folder"
        }
        return nil
    }
}
