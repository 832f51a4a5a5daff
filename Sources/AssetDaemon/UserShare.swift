// What one user's connections hold together: each uid may take half of
// control.total_buffer_bytes, so one user's many connections cannot fill the total and pause
// every other user's (assetd.toml(5), [control]). Shared by the uid's sessions, so counting
// costs a session no lookup. Loop-bound.

/// What one uid's sessions hold, against its share of the buffers: a principal's (a uid, or
/// the first uid of the subuid range it is in: PeerIdentity.principal).
final class UserShare {
    let uid: UInt32
    /// The uid's open sessions; the server forgets the share with the last.
    var sessions = 0
    /// Bytes the uid's sessions hold (Session.bufferedBytes, as each last counted it).
    var buffered = 0
    /// What the uid's requests hold running or being parsed: the parse gate lets in a line of
    /// a uid with none at once (ParseGate).
    var running = 0
    /// The one connection of the uid read on in its unfinished line while the uid is over its
    /// share or all connections are over the total: a line frees nothing until it ends, so
    /// the uid's lines pass those bounds by at most one line, and each still ends in turn.
    /// It keeps the turn while its line grows (ControlServer.passIdleLineTurns).
    var lineReader: Session?
    /// Its connections paused for their unfinished lines meanwhile, in order (some may since
    /// have been read again): the first is offered the next turn.
    var lineWaiting: [Session] = []

    init(uid: UInt32) { self.uid = uid }

    /// What a uid may hold of a total `bound`: half. Two users reach the total; one alone
    /// leaves the other half to the rest.
    static func share(of bound: Int) -> Int { bound / 2 }
}

extension ControlServer {
    /// The share of `uid`, for a session of it being opened.
    func share(of uid: UInt32) -> UserShare {
        let user = users[uid] ?? UserShare(uid: uid)
        users[uid] = user
        user.sessions += 1
        return user
    }

    /// A session of `user` was removed. The share is kept while a request of a closed session
    /// runs: a reconnect must find it counted.
    func shareEnded(_ user: UserShare) {
        user.sessions -= 1
        if user.sessions == 0, user.running == 0 { users[user.uid] = nil }
    }

    /// Every second: a uid's reader whose line got no byte for a second, others waiting,
    /// passes the turn (Session.passLineTurn).
    func passIdleLineTurns() {
        let epoch = stallEpoch
        for user in users.values where !user.lineWaiting.isEmpty {
            if let reader = user.lineReader, reader.lineIdle(epoch: epoch) { reader.passLineTurn() }
        }
    }

    /// `user` is back under its share: its connections paused for it are read again.
    func userUnderShare(_ user: UserShare, except session: Session) {
        for s in sessions.values where s.user === user && s.readingPaused && s !== session { s.updateReading() }
    }
}

extension Session {
    /// This connection's uid holds `delta` more bytes: back under its share, its other
    /// connections paused for it are read again.
    func userHolds(_ delta: Int) {
        let wasOver = user.buffered > gate.share
        user.buffered += delta
        if wasOver, user.buffered <= gate.share { server.userUnderShare(user, except: self) }
    }
}

extension Session {
    /// Whether this connection, holding an unfinished line while its uid is over its share or
    /// all are over the total, reads on: if no other of its uid's does. If one does, it waits
    /// its turn (lineReaderDone).
    func readsOnInLine() -> Bool {
        guard let reader = user.lineReader else {
            user.lineReader = self
            return true
        }
        if reader === self { return true }
        if !waitsForLine {
            waitsForLine = true
            user.lineWaiting.append(self)
        }
        return false
    }

    /// This connection no longer reads on in its line (it ended, or the connection is held or
    /// closed for something else): the uid's next connection waiting is offered the turn, and
    /// those after it while it does not take it (read again meanwhile, or under the bounds).
    func lineReaderDone() {
        let user = user
        user.lineReader = nil
        while user.lineReader == nil, !user.lineWaiting.isEmpty {
            let next = user.lineWaiting.removeFirst()
            next.waitsForLine = false
            next.updateReading()
        }
    }

    /// Closing: this connection's turn in line goes to the next, and its place in line goes.
    func leaveLine() {
        if waitsForLine {
            waitsForLine = false
            user.lineWaiting.removeAll { $0 === self }
        }
        if user.lineReader === self { lineReaderDone() }
    }
}
