// Long request lines wait to be parsed while the requests running on all connections hold
// more than control.total_buffer_bytes: reading admits lines by their text, and parsed,
// `[0,0,…]` holds about twelve times its line. Running requests always end, so a line waits
// only until they do. Loop-bound.

import AssetService

final class ParseGate {
    /// control.total_buffer_bytes.
    let bound: Int
    /// What the requests running on all connections hold (Session.runningBytes).
    private(set) var running = 0
    /// Sessions whose next line waits; one may be here twice, or closed: it is skipped then.
    private var waiting: [Session] = []

    init(bound: Int) { self.bound = bound }

    /// What a line counted as `bytes` is let in for while it is parsed: what it may parse
    /// into, a 24-byte slot for each `0,` of `[0,0,…]` and an array up to twice the room it
    /// uses, but at most a connection's bound (a request over it is refused once parsed).
    /// Counted by its text, 128 lines of 300 KB were all let in at once and held 6 MiB each.
    static func reserve(_ bytes: Int, _ limits: ControlLimits) -> Int {
        max(bytes, min(bytes * 24, limits.connectionInputBytes))
    }

    /// The requests running hold `delta` more bytes.
    func changed(by delta: Int) { running += delta }

    /// Whether `session` may parse a line counted as `bytes` now; if not, it is pumped again
    /// once the running requests hold less (`resume`).
    func admits(_ bytes: Int, _ session: Session) -> Bool {
        if running == 0 || running + bytes <= bound {
            session.waitingToParse = false
            return true
        }
        if !session.waitingToParse {
            session.waitingToParse = true
            waiting.append(session)
        }
        return false
    }

    /// Sessions whose line waits (debug `stats`).
    var waitingCount: Int { waiting.count { $0.waitingToParse && !$0.closed } }

    /// At a turn's end: pumps the sessions waiting, in order, while the running requests hold
    /// less than the bound. One that must wait again goes to the back.
    func resume() {
        guard !waiting.isEmpty, running < bound else { return }
        let now = waiting
        waiting = []
        for (i, s) in now.enumerated() {
            guard running < bound else {
                waiting.append(contentsOf: now[i...])
                return
            }
            guard s.waitingToParse, !s.closed else { continue }
            s.waitingToParse = false
            s.pump()
        }
    }
}
