// Who a peer is: user name and groups from its uid (getpwuid_r, getgrouplist), and whether
// the current access settings make it an admin (assetd(8), CONTROL PROTOCOL, Access).

import AssetStore
import Foundation

/// A connected client's identity, read once at accept.
public struct PeerIdentity: Sendable {
    public let uid: UInt32
    public let gid: UInt32
    public let userName: String
    /// The names of the user's groups, primary included, as the group database's bytes.
    public let groupNames: Set<[UInt8]>
    /// The ids of the user's groups, primary included.
    public let gids: [UInt32]
    /// Whose the per-uid bounds count it as: the first uid of a subordinate range `uid` is in
    /// (control.subuid_file), else `uid`. Never whether it is an admin: that is `uid`'s.
    public var principal: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
        principal = uid
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        var gids = [gid_t](repeating: 0, count: 256)
        var count = Int32(gids.count)
        var ids: Set<UInt32> = [gid]
        // pw_name points into `buffer`: read it, and hand it on, while the buffer is pinned.
        userName = buffer.withUnsafeMutableBufferPointer { buf in
            guard getpwuid_r(uid, &pwd, buf.baseAddress!, buf.count, &result) == 0, result != nil,
                let name = pwd.pw_name
            else { return PeerIdentity.ownerName(uid: uid, passwdName: nil) }
            // The groups of the name's bytes: a name repaired to valid UTF-8 would be another
            // user's, whose groups (an admin's) this one would get.
            if getgrouplist(name, gid, &gids, &count) >= 0 {
                ids.formUnion(gids.prefix(Int(count)))
            }
            return PeerIdentity.ownerName(uid: uid, passwdName: name)
        }
        self.gids = ids.sorted()
        var names = Set<[UInt8]>()
        for g in self.gids {
            var grp = group()
            var gres: UnsafeMutablePointer<group>?
            buffer.withUnsafeMutableBufferPointer { buf in
                if getgrgid_r(g, &grp, buf.baseAddress!, buf.count, &gres) == 0, gres != nil, let n = grp.gr_name {
                    names.insert(Array(UnsafeRawBufferPointer(start: n, count: strlen(n))))
                }
            }
        }
        groupNames = names
    }

    /// A peer of these ids and names, as the user and group databases would give them.
    init(uid: UInt32, gid: UInt32, userName: String, gids: [UInt32], groupNames: Set<[UInt8]>) {
        (self.uid, self.gid, self.userName, self.gids, self.groupNames) = (uid, gid, userName, gids, groupNames)
        principal = uid
    }

    /// The owner name of `uid` (OwnerName.of: `assetctl --db` uses the same rule).
    static func ownerName(uid: UInt32, passwdName: UnsafePointer<CChar>?) -> String {
        OwnerName.of(uid: uid, passwdName: passwdName)
    }

    /// Admins: uid 0, the daemon's own uid, and configured uids and groups.
    public func isAdmin(_ config: DaemonConfig) -> Bool {
        isAdmin(uids: config.adminUIDs, groups: config.adminGroups)
    }

    /// Admins: uid 0, the daemon's own uid, and the uids and groups given.
    /// A gid matches the peer's gids only and a name its groups' names only, byte for byte: as
    /// one set of texts, a group named `10` matched gid 10, and `cafe` + U+0301 matched `café`.
    public func isAdmin(uids: [UInt32], groups admins: [AdminGroup]) -> Bool {
        if PeerIdentity.isAdmin(uid: uid, uids: uids) { return true }
        return admins.contains { admin in
            switch admin {
            case .gid(let g): gids.contains(g)
            case .name(let n): groupNames.contains(Array(n.utf8))
            }
        }
    }

    /// Whether `uid` is an admin by its number alone (uid 0, the daemon's own, or one of
    /// `uids`), which needs neither the user nor the group database.
    public static func isAdmin(uid: UInt32, uids: [UInt32]) -> Bool {
        uid == 0 || uid == ownUID || uids.contains(uid)
    }

    /// The daemon's uid, asked once: it is checked on every touch.
    private static let ownUID = getuid()
}

/// An entry of `control.admin_groups`: a number is a gid, a string a group's name.
public enum AdminGroup: Sendable, Hashable, CustomStringConvertible {
    case gid(UInt32)
    case name(String)

    public var description: String {
        switch self {
        case .gid(let g): String(g)
        case .name(let n): "\"\(n)\""
        }
    }
}
