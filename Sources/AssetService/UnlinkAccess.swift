// Whether a client could unlink a file itself, for control.enforce_ownership: a non-admin may
// name a file (register it, or reference one registered) only if so, since the daemon, running
// as root, may later unlink it for that client's rules. Unix rules: write and search
// permission on the parent folder (owner, then group, then other bits, as the kernel picks
// them), and in a sticky folder owning the file or the folder. Judged on what the probe's
// descriptors saw (UnlinkSubject), never by path again: a folder renamed in between would
// stand in for another. A file not there yet is judged on the nearest folder that exists
// (whatever is put there later is what the daemon would unlink), in a sticky one only its
// owner may. A file with other links than this name is the caller's own or refused: the
// folder judged may not be the one the name is in when the file is unlinked. In a folder with
// an access ACL only the folder's owner is judged (by the owner bits, which the ACL's owner
// entry is): a named entry may keep out a user the other bits let in. Capabilities are not
// consulted: a client they alone let in is refused, never the other way round.

import AssetStore
import Glibc

public enum UnlinkAccess {
    /// Nil if `uid`, with the groups `gids`, could unlink `subject`'s file itself, or create
    /// it where it is missing; else why not.
    public static func refusal(_ subject: UnlinkSubject, uid: UInt32, gids: [UInt32]) -> String? {
        let parent = subject.folder
        let parentPath = subject.folderPath
        if subject.folderHasACL && parent.st_uid != uid {
            return "\(parentPath) has an access ACL: only its owner may name files in it"
        }
        let bits: mode_t =
            parent.st_uid == uid
            ? parent.st_mode >> 6 : gids.contains(parent.st_gid) ? parent.st_mode >> 3 : parent.st_mode
        guard bits & 0o3 == 0o3 else { return "uid \(uid) may not remove files from \(parentPath)" }
        let sticky = parent.st_mode & S_ISVTX != 0
        guard let file = subject.file else {
            if sticky && parent.st_uid != uid {
                return "uid \(uid) may not name \(subject.path), not there yet, in the sticky folder \(parentPath)"
            }
            return nil
        }
        if sticky && file.st_uid != uid && parent.st_uid != uid {
            return "uid \(uid) may not remove \(subject.path) from the sticky folder \(parentPath)"
        }
        if file.st_nlink > 1 && file.st_uid != uid {
            return "\(subject.path) has other links and is not uid \(uid)'s"
        }
        return nil
    }
}
