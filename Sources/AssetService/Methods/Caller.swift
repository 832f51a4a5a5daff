// Who calls a method: the daemon makes it from the socket's peer credentials, `assetctl --db`
// from the process's own user (an admin).

/// Who is calling, from the socket's peer credentials.
public struct Caller: Sendable {
    /// The client's uid.
    public var uid: UInt32
    /// The client's user name (or the uid as text).
    public var userName: String
    /// True for uid 0, the daemon's uid, and configured admins.
    public var isAdmin: Bool
    /// The client's groups, primary included, for the checks of file permissions.
    public var gids: [UInt32]
    /// Whose the per-uid bounds count the client as (PeerIdentity.principal): its uid, or the
    /// first uid of the subordinate range its uid is in. Not for ownership or admin status.
    public var principal: UInt32

    public init(uid: UInt32, userName: String, isAdmin: Bool, gids: [UInt32] = [], principal: UInt32? = nil) {
        self.uid = uid
        self.principal = principal ?? uid
        self.userName = userName
        self.isAdmin = isAdmin
        self.gids = gids
    }
}
