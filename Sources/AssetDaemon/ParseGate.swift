// Lines over a kilobyte wait to be parsed while the requests running on all connections hold
// more than control.total_buffer_bytes: reading admits lines by their text, and parsed,
// `[0,0,…]` holds about twelve times its line. Running requests always end, so a line waits
// only until they do. Lines are let in by order of arrival, and a user with nothing running
// gets one in past the total: one user's many lines cannot keep every other user's waiting
// for as long as it sends them. But only while what runs stays within one more total: uids
// are not scarce (a subuid range has 65,536), and 80 of them, one line each, held 495 MiB
// against a total of 128 MiB. Past that such a line waits in order with the rest. A user held
// to its share (not an admin) with something running gets one in only while its running
// requests stay within the share. Loop-bound.

import AssetService

final class ParseGate {
    /// control.total_buffer_bytes.
    let bound: Int
    /// What one user's connections may hold together (UserShare.share): read by sessions.
    let share: Int
    /// What the requests running on all connections hold (Session.runningBytes, parseReserve).
    private(set) var running = 0
    /// Sessions whose next line waits, in order of arrival; a closed one is skipped.
    private var waiting: [(session: Session, bytes: Int)] = []

    init(bound: Int) {
        self.bound = bound
        share = UserShare.share(of: bound)
    }

    /// What a line counted as `bytes` is let in for while it is parsed: what it may parse
    /// into, a 24-byte slot for each `0,` of `[0,0,…]` and an array up to twice the room it
    /// uses, but at most a connection's bound (a request over it is refused once parsed) and
    /// half the total: more, and it would wait for nothing at all to run.
    /// Counted by its text, 128 lines of 300 KB were all let in at once and held 6 MiB each.
    static func reserve(_ bytes: Int, _ limits: ControlLimits) -> Int {
        max(bytes, min(bytes * 24, limits.connectionInputBytes, limits.totalBufferBytes / 2))
    }

    /// Told when a uid with no session left has nothing running either (ControlServer.users
    /// forgets it): else its share stayed until the uid connected again, one for each uid.
    var userEnded: (UserShare) -> Void = { _ in }

    /// The requests of `user` running hold `delta` more bytes.
    func changed(by delta: Int, of user: UserShare) {
        running += delta
        user.running += delta
        if user.running == 0, user.sessions == 0 { userEnded(user) }
    }

    /// Whether a line counted as `bytes` fits the total now (or nothing runs).
    private func fits(_ bytes: Int) -> Bool { running == 0 || running + bytes <= bound }

    /// Whether a line counted as `bytes` of a user with nothing running may pass the total:
    /// while what runs stays within one more total (its reserve is at most half the total, so
    /// such a line waits only for others' requests, which end).
    private func passesAlone(_ bytes: Int) -> Bool { running == 0 || running + bytes <= 2 * bound }

    /// Whether `session`'s uid, held to its share, would pass it with `bytes` more running:
    /// else one user's many connections, each let in under the total, filled it with parsed
    /// weight, and every other user's line waited (and its reading paused over the total).
    private func overShare(_ bytes: Int, _ session: Session) -> Bool {
        session.heldToShare && session.user.running + bytes > share
    }

    /// Whether `session` may parse a line counted as `bytes` as it reads it: it would be let
    /// in at once. A user's count is kept as it changes: a scan of the sessions for the users
    /// with something running cost each line over a kilobyte a walk of all of them.
    /// A line of a user with nothing running that would pass the total waits for `resume`:
    /// lines let in past it go in order.
    func hasRoom(for bytes: Int, _ session: Session) -> Bool {
        guard fits(bytes) else { return false }
        return session.user.running == 0
            || (!overShare(bytes, session) && !waiting.contains { $0.session.waitingToParse && !$0.session.closed })
    }

    /// Whether `session` may parse a line counted as `bytes` now: if it fits, and its user has
    /// nothing running or no line waits before it. If not, it waits its turn and is pumped
    /// again by `resume`, which lets it in.
    func admits(_ bytes: Int, _ session: Session) -> Bool {
        if session.waitingToParse {
            guard session.letIn || (session.user.running == 0 && fits(bytes)) else { return false }
            session.letIn = false
            forget(session)
            return true
        }
        if hasRoom(for: bytes, session) { return true }
        session.waitingToParse = true
        waiting.append((session, bytes))
        return false
    }

    /// Sessions whose line waits (debug `stats`).
    var waitingCount: Int { waiting.count { $0.session.waitingToParse && !$0.session.closed } }

    /// A closed session's place in the line goes.
    func forget(_ session: Session) {
        guard session.waitingToParse else { return }
        session.waitingToParse = false
        waiting.removeAll { $0.session === session }
    }

    /// At a turn's end: lets in the sessions waiting, in order of arrival, up to the first
    /// that does not fit the total; and any whose user has nothing running, up to the first
    /// of those that would pass one more total. One whose user is at its share waits for that
    /// user's requests without holding back the others'.
    func resume() {
        // Asked at every turn's end: on the empty list (the common case) `removeAll(where:)`
        // still allocated a buffer of its own (docs/PERFORMANCE.md, Pipelined small requests).
        guard !waiting.isEmpty else { return }
        waiting.removeAll { $0.session.closed || !$0.session.waitingToParse }
        guard !waiting.isEmpty else { return }
        var blocked = false
        var aloneBlocked = false
        for (s, bytes) in waiting where s.waitingToParse && !s.closed {
            if s.user.running != 0 {
                if overShare(bytes, s) { continue }
                if blocked || !fits(bytes) {
                    blocked = true
                    continue
                }
            } else if aloneBlocked || !passesAlone(bytes) {
                aloneBlocked = true
                blocked = true
                continue
            }
            s.letIn = true
            s.pump()
            s.letIn = false  // not taken (the session stopped before its line): judged again
        }
    }
}
