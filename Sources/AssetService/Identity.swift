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
        var name = String(uid)
        if getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let n = pwd.pw_name {
            name = String(cString: n)
        }
        userName = name
        var gids = [gid_t](repeating: 0, count: 256)
        var count = Int32(gids.count)
        var groups: Set<String> = [String(gid)]
        var ids: Set<UInt32> = [gid]
        if name != String(uid), getgrouplist(name, gid, &gids, &count) >= 0 {
            for g in gids.prefix(Int(count)) {
                groups.insert(String(g))
                ids.insert(g)
            }
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
