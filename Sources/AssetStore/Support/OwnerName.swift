// Owner names: which name a uid owns as, and how two names compare. One rule for the daemon's
// clients and for `assetctl --db`, which writes as the user running it: two rules made one
// user two owners (`#1001` online, `1001` offline), and one of them another user's name.

import Glibc

/// Owner names compared as their UTF-8 bytes, as SQLite compares the `owner` column: under
/// String's equality two owners whose names are only canonically equivalent (`cafe` + U+0301
/// and `café`) would be one, and either could act on the other's objects, leases and quota.
public enum OwnerName {
    public static func same(_ a: String, _ b: String) -> Bool { UTF8Key.same(a, b) }

    /// The owner name of `uid`: its user name from the user database if that is valid UTF-8
    /// and does not start with `#`, else `#` and the uid. Repairing a name (U+FFFD for each bad
    /// byte) made `a\xff` and `a\xfe` one owner, and the uid as text made a uid without a
    /// passwd entry the owner of a user named so; `useradd` refuses `#` in a name, but another
    /// user database may hold one, and a user named `#1001` would be uid 1001's owner.
    public static func of(uid: UInt32, passwdName: UnsafePointer<CChar>?) -> String {
        if let passwdName, passwdName.pointee != 0, passwdName.pointee != CChar(UInt8(ascii: "#")),
            let s = String(validatingCString: passwdName)
        {
            return s
        }
        return "#\(uid)"
    }

    /// The owner name of `uid`, looked up in the user database (`of(uid:passwdName:)`).
    public static func of(uid: UInt32) -> String {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        // pw_name points into `buffer`: read while it is pinned.
        return buffer.withUnsafeMutableBufferPointer { buf in
            guard getpwuid_r(uid, &pwd, buf.baseAddress!, buf.count, &result) == 0, result != nil else {
                return of(uid: uid, passwdName: nil)
            }
            return of(uid: uid, passwdName: pwd.pw_name)
        }
    }
}
