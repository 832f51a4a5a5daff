// Connections refused at accept: one user reconnecting in a loop past its cap must cost the
// loop no lookup in the user and group databases (with sssd or LDAP a round trip) and the
// log no line each time (past journald's rate limit the daemon's other messages go too). A
// uid's first refusal in a minute is logged, the rest counted; non-admins' ids are remembered.

import AssetService
import ControlProtocol
import EventLoop

/// What the server remembers of the connections it refused: for the log and the lookups.
struct ConnectionRefusals {
    /// How often a uid's refusals are logged, and how long a non-admin's ids are remembered.
    static let interval = 60.0
    /// Remembered non-admin ids at most: more are looked up again.
    static let rememberedLimit = 4096

    /// uid and gid pairs refused and found not to be an admin's, this interval.
    private var notAdmins: Set<UInt64> = []
    /// Refusals not yet logged by uid, for the uids whose first of the interval was logged.
    private var unlogged: [UInt32: Int] = [:]
    private var intervalEnd = QueryClock.now() + ConnectionRefusals.interval

    private static func key(_ uid: UInt32, _ gid: UInt32) -> UInt64 { UInt64(uid) << 32 | UInt64(gid) }

    /// Whether `uid` connecting with `gid` was found not to be an admin this interval.
    func isKnownNotAdmin(uid: UInt32, gid: UInt32) -> Bool {
        notAdmins.contains(Self.key(uid, gid))
    }

    /// Remembers that `uid` with `gid` is not an admin, until the interval ends.
    mutating func noteNotAdmin(uid: UInt32, gid: UInt32) {
        if notAdmins.count < Self.rememberedLimit { notAdmins.insert(Self.key(uid, gid)) }
    }

    /// Counts a refusal of `uid`; true if it is to be logged now (its first this interval).
    mutating func refused(uid: UInt32) -> Bool {
        if let n = unlogged[uid] {
            unlogged[uid] = n + 1
            return false
        }
        unlogged[uid] = 0
        return true
    }

    /// Once the interval is over (asked every second): the refusals not logged, by uid, and a
    /// new interval in which each uid's first is not logged at once if it was refused meanwhile.
    mutating func intervalEnded(now: Double) -> [(uid: UInt32, count: Int)] {
        guard now >= intervalEnd else { return [] }
        intervalEnd = now + Self.interval
        notAdmins = []
        let counts = unlogged.filter { $0.value > 0 }.map { (uid: $0.key, count: $0.value) }
        unlogged = [:]
        for c in counts { unlogged[c.uid] = 0 }  // still refused: the next is counted, not logged
        return counts.sorted { $0.uid < $1.uid }
    }

    /// Access settings were reloaded: who is an admin may have changed.
    mutating func forgetAdmins() {
        notAdmins = []
    }
}

extension ControlServer {
    /// The peer's name and groups, from the user and group databases.
    func lookUp(_ cred: PeerCredentials) -> PeerIdentity {
        #if DEBUG
        DebugStats.identityLookups += 1
        #endif
        return PeerIdentity(uid: cred.uid, gid: cred.gid)
    }

    /// Answers a connection of `uid` (its principal: a subuid range is one user's) refused at
    /// accept with `busy` and closes it; logged if it is the uid's first refusal this minute
    /// (the rest are counted, ConnectionRefusals).
    func refuse(_ stream: PipeStream, uid: UInt32, _ message: String, log: String) {
        if refusals.refused(uid: uid) {
            daemon.logger.warning("refusing a connection: \(log)\(log.hasPrefix("uid ") ? "" : " (uid \(uid))")")
        }
        stream.write(RPCLine.error(id: .null, .application(.busy, message)))
        flushing(stream)
    }

    /// Every second: once a minute, the refusals not logged, one line a uid.
    func logRefusals() {
        for (uid, count) in refusals.intervalEnded(now: QueryClock.now()) {
            daemon.logger.warning("refused \(count) more connections of uid \(uid) in the last minute")
        }
    }
}
