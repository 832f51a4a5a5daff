// Who a peer is: user name and groups from its uid (getpwuid_r, getgrouplist), and whether
// the current access settings make it an admin (assetd(8), CONTROL PROTOCOL, Access).

import Foundation

/// A connected client's identity, read once at accept.
public struct PeerIdentity: Sendable {
    public let uid: UInt32
    public let gid: UInt32
    public let userName: String
    /// Names and numeric ids (as text) of the user's groups, primary included.
    public let groups: Set<String>
    /// The ids of the user's groups, primary included.
    public let gids: [UInt32]

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        var gids = [gid_t](repeating: 0, count: 256)
        var count = Int32(gids.count)
        var groups: Set<String> = [String(gid)]
        var ids: Set<UInt32> = [gid]
        // pw_name points into `buffer`: read it, and hand it on, while the buffer is pinned.
        userName = buffer.withUnsafeMutableBufferPointer { buf in
            guard getpwuid_r(uid, &pwd, buf.baseAddress!, buf.count, &result) == 0, result != nil,
                let name = pwd.pw_name
            else { return PeerIdentity.ownerName(uid: uid, passwdName: nil) }
            // The groups of the name's bytes: a name repaired to valid UTF-8 would be another
            // user's, whose groups (an admin's) this one would get.
            if getgrouplist(name, gid, &gids, &count) >= 0 {
                for g in gids.prefix(Int(count)) {
                    groups.insert(String(g))
                    ids.insert(g)
                }
            }
            return PeerIdentity.ownerName(uid: uid, passwdName: name)
        }
        self.gids = ids.sorted()
        for g in groups.compactMap({ UInt32($0) }) {
            var grp = group()
            var gres: UnsafeMutablePointer<group>?
            if getgrgid_r(g, &grp, &buffer, buffer.count, &gres) == 0, gres != nil, let n = grp.gr_name {
                groups.insert(String(cString: n))
            }
        }
        self.groups = groups
    }

    /// The owner name of `uid`: its user name from the user database if that is valid UTF-8,
    /// else `#` and the uid, which `useradd` refuses in a name. Repairing a name (U+FFFD for each
    /// bad byte) made `a\xff` and `a\xfe` one owner, and the uid as text made a uid without a
    /// passwd entry the owner of a user named so.
    static func ownerName(uid: UInt32, passwdName: UnsafePointer<CChar>?) -> String {
        if let passwdName, passwdName.pointee != 0, let s = String(validatingCString: passwdName) { return s }
        return "#\(uid)"
    }

    /// Admins: uid 0, the daemon's own uid, and configured uids and groups.
    public func isAdmin(_ config: DaemonConfig) -> Bool {
        isAdmin(uids: config.adminUIDs, groups: config.adminGroups)
    }

    /// Admins: uid 0, the daemon's own uid, and the uids and groups given.
    public func isAdmin(uids: [UInt32], groups admins: [String]) -> Bool {
        uid == 0 || uid == PeerIdentity.ownUID || uids.contains(uid) || !groups.isDisjoint(with: admins)
    }

    /// The daemon's uid, asked once: it is checked on every touch.
    private static let ownUID = getuid()
}
