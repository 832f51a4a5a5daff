// Events to watchers: a broadcast renders each event once for all of them (EventLines), each
// watcher takes them a slice at a time as it reads (Session.deliver), and a user who is not an
// admin holds at most control.max_watchers_per_uid watching connections, since each still
// costs every commit a look on the loop (its filter, at each event it is given or passes over),
// and a slice of copies. Loop-bound.

import AssetService
import ControlProtocol

extension ControlServer {
    /// Whether any connection watches. Events are made only for someone to send them to:
    /// with no watcher, a group commit's put events cost the loop about a tenth of its time.
    /// Asked only for a commit or a sweep, not for every reply.
    var watched: Bool { sessions.values.contains { $0.watching != nil } }

    /// Hands the events of `source` to every watcher whose filter takes them, each made and
    /// rendered once for all, and given to each watcher as it takes them (Session.deliver).
    /// Weighed once in the total while a watcher holds them: a watcher that reads holds them
    /// shared, not copied, and one that does not is dropped past the bounds.
    func broadcast(_ source: EventSource) {
        guard watched else { return }
        let lines = EventLines(source)
        guard lines.count > 0 else { return }
        lines.holders = 1
        lines.number = broadcasts
        broadcasts += 1
        eventBytes += lines.weight
        buffered(lines.weight, by: nil)
        for session in sessions.values where session.watching != nil { session.send(lines) }
        release(lines)
        // Unfinished lines aside (overTotalHeld): two uids' lines may keep the total over, and
        // readers of a big commit would be dropped at every broadcast. Nor while what is not
        // events keeps it over alone: no watcher's drop would bring it under.
        if overTotalHeld, !overTotalWithoutEvents { dropLaggingWatchers() }
    }

    /// Over the total after a broadcast: drops the watchers with more than 16 MiB of events
    /// waiting behind the commit they are being given (even ones that read), the one holding
    /// the oldest broadcast first, the most waiting first among those, until under the total.
    /// The oldest events are held by the watchers furthest behind alone, so dropping them
    /// frees what dropping a reader on the last commit would not: one user's watchers that
    /// pin earlier commits go before every other user's readers of the last two.
    private func dropLaggingWatchers() {
        let lagging = sessions.values.filter { $0.queuedWeight > Session.eventBacklogLimit }.sorted {
            ($0.oldestHeld ?? .max, -$0.queuedWeight) < ($1.oldestHeld ?? .max, -$1.queuedWeight)
        }
        for session in lagging where !session.closed {
            guard overTotalHeld else { return }  // a drop's release counts through buffered()
            daemon.logger.warning("dropping a watcher (uid \(session.identity.uid)) that does not read its events")
            noteDropped()
            session.close(flush: false)
        }
    }

    /// A watcher (or the broadcast) is done with `lines`: the last one frees their weight.
    func release(_ lines: EventLines) {
        lines.holders -= 1
        guard lines.holders == 0 else { return }
        eventBytes -= lines.weight
        buffered(-lines.weight, by: nil)
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
            $0.watching != nil && $0.identity.principal == identity.principal && !$0.identity.isAdmin(config)
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
