// Who can replace a root (assetd(8), "Managed roots"). assetd runs as root and unlinks what
// its roots hold; whoever may rename or remove a name on the way to a root could swap the
// root for a symlink to /etc between a put and a sweep. So every folder in which a name of
// the root's path is looked up (symlinks followed, as the kernel does) must be owned by root
// or assetd's user and not writable by group or others unless sticky, as OpenSSH's
// StrictModes and systemd-tmpfiles' "unsafe path transition" require. In a sticky folder
// others may write (/tmp), the entry itself must be root's or assetd's user's: its owner may
// rename it. A step that cannot be looked at refuses the root rather than pass it unjudged.

import Glibc

extension RootHygiene {
    /// Why `root` (absolute, existing) can be replaced by someone else than root and the
    /// user `uid`, or nil: the first folder on its way that another user owns, or that group
    /// or others may write without the sticky bit.
    static func replaceable(
        _ root: String, uid: UInt32, privateGroup: (gid_t, uid_t) -> Bool = RootHygiene.isPrivateGroup
    ) -> String? {
        var pending = Array(root.split(separator: "/").map(String.init).reversed())
        var folder = [String]()  // the real folder reached so far, "/" when empty
        var links = 0
        while let name = pending.popLast() {
            if name == "." || name.isEmpty { continue }
            if name == ".." {
                _ = folder.popLast()
                continue
            }
            let here = "/" + folder.joined(separator: "/")
            var st = stat()
            guard stat(here, &st) == 0 else { return unreadable(root, here) }
            if let why = unsafeFolder(here, st, uid: uid, privateGroup: privateGroup) {
                return "\(root) can be replaced by another user: \(why)"
            }
            let path = folder.isEmpty ? "/" + name : here + "/" + name
            var lst = stat()
            guard lstat(path, &lst) == 0 else { return unreadable(root, path) }
            if st.st_mode & S_ISVTX != 0, st.st_mode & 0o022 != 0, lst.st_uid != 0, lst.st_uid != uid {
                return "\(root) can be replaced by another user: \(path) belongs to user \(lst.st_uid), "
                    + "who may rename it in the sticky folder \(here); make root own it (chown root \(path)) "
                    + "or move the root elsewhere"
            }
            if lst.st_mode & S_IFMT == S_IFLNK {
                links += 1
                guard links <= 40, let target = readLink(path) else { return unreadable(root, path) }
                if target.hasPrefix("/") { folder = [] }
                pending += Array(target.split(separator: "/").map(String.init).reversed())
            } else {
                folder.append(name)
            }
        }
        return nil
    }

    private static func unreadable(_ root: String, _ path: String) -> String {
        "\(root) cannot be judged: \(path) cannot be looked at (\(String(cString: strerror(errno)))); "
            + "assetd refuses a root it cannot check no other user can replace"
    }

    /// What is wrong with `path` as a folder on the way to a root, or nil.
    private static func unsafeFolder(
        _ path: String, _ st: stat, uid: UInt32, privateGroup: (gid_t, uid_t) -> Bool
    ) -> String? {
        let mode = String(st.st_mode & 0o7777, radix: 8)
        if st.st_uid != 0 && st.st_uid != uid {
            return "\(path) belongs to user \(st.st_uid), who may rename what is in it; "
                + "make root own it (chown root \(path)) or move the root elsewhere"
        }
        // A group only its owner is in (a user private group, umask 002) adds no one.
        // Asked only of a group-writable folder: the lookup may scan every account.
        let open = st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0
        let groupIsOwner = open && st.st_mode & 0o002 == 0 && privateGroup(st.st_gid, st.st_uid)
        if open && !groupIsOwner {
            return "\(path) is writable by its group or others (mode \(mode)) without the sticky bit; "
                + "chmod go-w \(path) (or chmod +t, as /tmp is) or move the root elsewhere"
        }
        return nil
    }

    /// True when `gid` is `owner`'s primary group and nobody else's: no listed members, no
    /// other account with it as primary group. Read at start only (getpwent is not reentrant).
    static func isPrivateGroup(_ gid: gid_t, _ owner: uid_t) -> Bool {
        guard let pw = getpwuid(owner), pw.pointee.pw_gid == gid else { return false }
        guard let gr = getgrgid(gid) else { return false }
        if let members = gr.pointee.gr_mem, members.pointee != nil { return false }
        setpwent()
        defer { endpwent() }
        while let other = getpwent() {
            if other.pointee.pw_gid == gid && other.pointee.pw_uid != owner { return false }
        }
        return true
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
