// Long request lines wait to be parsed while the requests running on all connections hold
// more than control.total_buffer_bytes: reading admits lines by their text, and parsed,
// `[0,0,…]` holds about twelve times its line. Running requests always end, so a line waits
// only until they do. Lines are let in by order of arrival, and a user with nothing running
// always gets one in: one user's many short lines (not gated, but counted) cannot keep every
// other user's long line waiting for as long as it sends them. Loop-bound.

import AssetService

final class ParseGate {
    /// control.total_buffer_bytes.
    let bound: Int
    /// What the requests running on all connections hold (Session.runningBytes).
    private(set) var running = 0
    /// The open sessions (ControlServer.sessions), read only to find the users with nothing
    /// running when a line would wait: counting each user's bytes at every request cost the
    /// hot path two hash updates.
    var sessions: () -> Dictionary<UInt64, Session>.Values = { [:].values }
    /// Sessions whose next line waits, in order of arrival; a closed one is skipped.
    private var waiting: [(session: Session, bytes: Int)] = []

    init(bound: Int) { self.bound = bound }

    /// What a line counted as `bytes` is let in for while it is parsed: what it may parse
    /// into, a 24-byte slot for each `0,` of `[0,0,…]` and an array up to twice the room it
    /// uses, but at most a connection's bound (a request over it is refused once parsed) and
    /// half the total: more, and it would wait for nothing at all to run.
    /// Counted by its text, 128 lines of 300 KB were all let in at once and held 6 MiB each.
    static func reserve(_ bytes: Int, _ limits: ControlLimits) -> Int {
        max(bytes, min(bytes * 24, limits.connectionInputBytes, limits.totalBufferBytes / 2))
    }

    /// The requests running hold `delta` more bytes.
    func changed(by delta: Int) { running += delta }

    /// The users with a request running or being parsed.
    private func busyUsers() -> Set<UInt32> {
        var busy = Set<UInt32>()
        for s in sessions() where s.runningBytes != 0 || s.parseReserve != 0 { busy.insert(s.identity.uid) }
        return busy
    }

    /// Whether `session` may parse a line counted as `bytes` now: if its user has nothing
    /// running, or no line waits before it and the total has room. If not, it waits its turn
    /// and is pumped again by `resume`.
    func admits(_ bytes: Int, _ session: Session) -> Bool {
        dropGone()
        let first = waiting.first?.session
        let ahead = first != nil && first !== session
        if (!ahead && fits(bytes)) || !busyUsers().contains(session.identity.uid) {
            if session.waitingToParse {
                session.waitingToParse = false
                waiting.removeAll { $0.session === session }
            }
            return true
        }
        if !session.waitingToParse {
            session.waitingToParse = true
            waiting.append((session, bytes))
        }
        return false
    }

    private func fits(_ bytes: Int) -> Bool { running == 0 || running + bytes <= bound }

    /// Sessions whose line waits (debug `stats`).
    var waitingCount: Int { waiting.count { $0.session.waitingToParse && !$0.session.closed } }

    /// A closed session's place in the line goes.
    func forget(_ session: Session) {
        guard session.waitingToParse else { return }
        session.waitingToParse = false
        waiting.removeAll { $0.session === session }
    }

    private func dropGone() {
        while let s = waiting.first?.session, s.closed || !s.waitingToParse { waiting.removeFirst() }
    }

    /// At a turn's end: pumps the sessions waiting, in order of arrival, up to the first whose
    /// line does not fit; and any whose user has nothing running.
    func resume() {
        dropGone()
        guard !waiting.isEmpty else { return }
        var busy = busyUsers()
        while let (s, bytes) = waiting.first, fits(bytes) || !busy.contains(s.identity.uid) {
            s.pump()
            if s.runningBytes != 0 { busy.insert(s.identity.uid) }
            dropGone()
            if waiting.first?.session === s { break }  // still waits (or waits again)
        }
        for (s, _) in waiting where !busy.contains(s.identity.uid) && s.waitingToParse && !s.closed {
            s.pump()
            if s.runningBytes != 0 { busy.insert(s.identity.uid) }
        }
    }
}
