// Events to watchers: a broadcast renders each event once for all of them (EventLines), and
// a user who is not an admin holds at most control.max_watchers_per_uid watching connections,
// since each still costs every commit a copy of its events on the loop. Loop-bound.

import AssetService
import ControlProtocol

extension ControlServer {
    /// Whether any connection watches. Events are made only for someone to send them to:
    /// with no watcher, a group commit's put events cost the loop about a tenth of its time.
    /// Asked only for a commit or a sweep, not for every reply.
    var watched: Bool { sessions.values.contains { $0.watching != nil } }

    /// Sends `events` to every watcher whose filter takes them, each rendered once for all.
    func broadcast(_ events: [ServerEvent]) {
        guard !events.isEmpty else { return }
        let lines = EventLines(events)
        for session in sessions.values where session.watching != nil { session.send(lines) }
    }

    /// Why `session` may not start watching, or nil. A watcher changing its filter is not
    /// counted again; admins are not counted at all, nor a uid's connections that are an
    /// admin's (by a group of their gid): the cap bounds what the admins did not allow.
    func watchRefusal(_ session: Session) -> RPCError? {
        guard session.watching == nil else { return nil }
        let config = daemon.config
        let identity = session.identity
        guard !identity.isAdmin(config) else { return nil }
        let limit = config.limits.maxWatchersPerUID
        let held = sessions.values.count {
            $0.watching != nil && $0.identity.uid == identity.uid && !$0.identity.isAdmin(config)
        }
        guard held >= limit else { return nil }
        // Once a connection: one pipelining refused watches would write a line each, at loop
        // speed, until journald's rate limit dropped the daemon's other messages too.
        if !session.watchRefusalLogged {
            session.watchRefusalLogged = true
            daemon.logger.warning("refusing a watch: uid \(identity.uid) holds \(held) watching connections")
        }
        return .application(
            .busy, "too many watching connections for uid \(identity.uid) (control.max_watchers_per_uid)",
            detail: ["limit": "control.max_watchers_per_uid", "value": .int(Int64(limit))])
    }
}
