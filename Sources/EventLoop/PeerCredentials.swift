// Who is at the other end of a Unix socket, as the kernel saw it when the peer connected.
// A plain value: read once when the stream is accepted or connected, never refreshed.

/// The process, user and group of a Unix socket peer (Linux `SO_PEERCRED`).
public struct PeerCredentials: Sendable, Equatable {
    /// The peer's process id when it connected.
    public let pid: Int32
    /// The peer's effective user id.
    public let uid: UInt32
    /// The peer's effective group id.
    public let gid: UInt32

    /// Creates credentials, for tests and for callers that obtained them elsewhere.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
