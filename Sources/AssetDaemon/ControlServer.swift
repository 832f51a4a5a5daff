// The control socket: accepts connections (refusing past max_connections, past the slots kept
// for admins, and past a uid's own cap), keeps the
// sessions, hands off the work their methods declare (the group commit, the query lane),
// and sends events after commits and sweeps. Loop-bound.

import AssetService
import AssetStore
import ControlProtocol
import EventLoop
import Foundation
import Logging

final class ControlServer {
    unowned let daemon: Daemon
    private var listener: PipeListener?
    private(set) var sessions: [UInt64: Session] = [:]
    private var nextSessionNumber: UInt64 = 1
    /// Open connections by principal (a uid, or a subuid range's first: PeerIdentity.principal),
    /// for control.max_connections_per_uid.
    private var connectionsByUID: [UInt32: Int] = [:]
    /// What the sessions of each principal hold together, against its share of the total.
    var users: [UInt32: UserShare] = [:]
    /// Progress notifications from the threads to the connections that asked.
    let progress = ProgressRelay()
    private var logger: Logger { daemon.logger }
    /// Read once: reload() never changes the limits, and the config behind them would cost
    /// every change of the total a copy of them.
    private let limits: ControlLimits
    /// Bytes all connections hold (requests waiting, partial lines, replies not taken).
    @exclusivity(unchecked) private(set) var bufferedTotal = 0
    /// Of `bufferedTotal`, the weight of the events waiting for watchers (counted once each,
    /// however many watchers wait for them).
    @exclusivity(unchecked) var eventBytes = 0
    /// Of `bufferedTotal`, the request lines read and not yet ended (Session.updateReading
    /// bounds them by each uid's share and the total, a line a uid past those).
    @exclusivity(unchecked) var lineBytes = 0
    /// Broadcasts made so far: each one's number (EventLines.number).
    @exclusivity(unchecked) var broadcasts = 0
    /// The most `bufferedTotal` has been since start (stats).
    @exclusivity(unchecked) private(set) var peakTotal = 0
    /// Refusals at accept: logged once a minute per uid, non-admins' ids remembered.
    var refusals = ConnectionRefusals()
    /// Connections dropped because they did not take their replies or events.
    private(set) var droppedConnections = 0
    /// Bytes of big replies and buffers freed since memory was last handed back to the system.
    @exclusivity(unchecked) private var releasedSinceTrim = 0
    /// The last request durations, for stats.
    @exclusivity(unchecked) private(set) var latencies = [Double](repeating: 0, count: 4096)
    @exclusivity(unchecked) private(set) var latencyCount = 0
    @exclusivity(unchecked) private(set) var requests = 0
    /// object.put's group commit; started with the socket, stopped by closeAll.
    private(set) var puts: PutPipeline?
    /// Calls counted against their uid's lease quota, one of a uid's at a time.
    private(set) lazy var leasedTurns = LeasedTurns(
        drain: { [unowned self] uid, then in
            if let puts { puts.afterQueued(uid: uid, then) } else { then() }
        },
        stopping: { [unowned self] in daemon.stopping })
    /// index.query and index.aggregate, on threads of their own; started with the socket.
    private(set) var queries: QueryLane?
    /// Streams closing after their replies are flushed. A connection's own keeps its slot
    /// until it is gone; what they hold counts in `bufferedTotal`, bounded with the rest.
    private(set) var closing = ClosingStreams()
    /// Connections closing that still hold their slots.
    var closingConnections: Int { closing.connections }
    private var reaper: EventLoop.Timer?
    /// object.get on the loop, over a snapshot kept for the rest of the loop turn.
    @exclusivity(unchecked) private(set) var pointReader: PointReader?
    private var turnHook: TurnHook?
    private var pollHook: TurnHook?
    /// Sessions with replies written this turn and not yet handed to the kernel.
    @exclusivity(unchecked) private var unflushed: [Session] = []
    /// True while flushReplies runs: a nested call would drop from `unflushed` the sessions
    /// appended meanwhile.
    @exclusivity(unchecked) private var flushingReplies = false
    /// Advances every second (Daemon.tick). A connection whose backlog has been over its own
    /// bound since before the previous advance is behind (Session.isBehind).
    @exclusivity(unchecked) private(set) var stallEpoch = 0
    /// The epoch in which a shed found none behind while still over the total: none becomes
    /// behind until the epoch advances, so the connections are not scanned again till then
    /// (the turn's end comes twice a loop turn).
    @exclusivity(unchecked) private var noneBehindIn = -1
    /// The epoch in which a shed left connections behind because only events held the total
    /// over: they are scanned again this epoch only once the rest is over it alone.
    @exclusivity(unchecked) private var sparedIn = -1
    /// Long lines wait here to be parsed while the running requests hold more than the total.
    let parseGate: ParseGate
    /// How long a closing connection may take to take its last replies.
    static let flushDeadline = 5.0

    init(daemon: Daemon) {
        self.daemon = daemon
        limits = daemon.config.limits
        parseGate = ParseGate(bound: limits.totalBufferBytes)
        parseGate.userEnded = { [unowned self] in if users[$0.uid] === $0 { users[$0.uid] = nil } }
    }

    var connectionCount: Int { sessions.count }

    func start(path: String, mode: UInt32) throws(UVError) {
        try progress.start(loop: daemon.loop) { [unowned self] in deliverProgress() }
        puts = try PutPipeline(
            store: daemon.store, loop: daemon.loop,
            noted: { [unowned self] in for r in $0 { daemon.noteCommit(r.commit) } },
            answered: { [unowned self] count, commits in
                published(commits)
                daemon.workEnded(count)
            })
        queries = try QueryLane(loop: daemon.loop, threads: daemon.config.limits.queryThreads)
        pointReader = try? PointReader(store: daemon.store)
        // The snapshot of one turn's gets ends before the loop waits again: an idle daemon
        // never pins it, and the WAL can restart.
        turnHook = try TurnHook(loop: daemon.loop) { [unowned self] in
            turnEnded()
            pointReader?.endSnapshot()
        }
        // Replies are written once a turn, like Redis's before it sleeps: a client woken
        // finds every reply of the turn, and the daemon's next wait finds more requests.
        // After the poll phase's callbacks (most replies), and before polling again (those of
        // timers and write completions): none waits for a later turn.
        pollHook = try TurnHook(loop: daemon.loop, at: .afterPolling) { [unowned self] in turnEnded() }
        listener = try PipeListener(loop: daemon.loop, path: path, mode: mode_t(mode)) { [unowned self] stream in
            accept(stream)
        }
    }

    private func accept(_ stream: PipeStream) {
        guard !daemon.stopping else {
            stream.write(RPCLine.error(id: .null, RPCError.shuttingDown))
            flushing(stream)
            return
        }
        guard let cred = stream.peerCredentials else {
            stream.close()
            return
        }
        let config = daemon.config
        // The uids of a subordinate range count as one user (one user in a user namespace is
        // many uids), keyed by the range's first uid, never its owner's: a range of root's
        // sharing root's keys would queue root's jobs behind a container's and lock it out
        // with root's connections. An admin only by its own uid and groups.
        let range = daemon.subordinates.range(of: cred.uid)
        let principal = range?.first ?? cred.uid
        // A connection closing holds its replies until taken (up to 5 s): it keeps its slot, or
        // reconnecting would hold any number of them.
        let held = sessions.count + closingConnections
        guard held < config.maxConnections else {
            refuse(stream, uid: principal, "too many connections", log: "\(held) of \(config.maxConnections) in use")
            return
        }
        // Admins may take the last slots and any number of their own: a user who holds every
        // other slot cannot lock them out. Counts first: a refusal asks the user and group
        // databases only if a group could make the peer an admin, once a minute per ids.
        let open = connectionsByUID[principal, default: 0]
        let capped = open >= config.limits.maxConnectionsPerUID
        let reserved = min(config.limits.adminReservedConnections, config.maxConnections - 1)
        let inReserve = held >= config.maxConnections - reserved
        var known: PeerIdentity?
        if capped || inReserve, !PeerIdentity.isAdmin(uid: cred.uid, uids: config.adminUIDs) {
            if !config.adminGroups.isEmpty, !refusals.isKnownNotAdmin(uid: cred.uid, gid: cred.gid) {
                known = lookUp(cred)
            }
            if known?.isAdmin(config) != true {
                refusals.noteNotAdmin(uid: cred.uid, gid: cred.gid)
                let whose = range.map { "uid \(cred.uid) (subuid range \($0.first)-\($0.last))" } ?? "uid \(cred.uid)"
                if capped {
                    refuse(
                        stream, uid: principal, "too many connections for \(whose) (control.max_connections_per_uid)",
                        log: "\(whose) holds \(open)")
                } else {
                    refuse(
                        stream, uid: principal, "too many connections: the last \(reserved) are kept for admins",
                        log: "\(held) of \(config.maxConnections) in use, the rest kept for admins")
                }
                return
            }
        }
        var identity = known ?? lookUp(cred)
        identity.principal = principal
        let user = share(of: principal)
        let session = Session(
            server: self, number: nextSessionNumber, stream: stream, identity: identity, user: user,
            maximumLine: config.maxRequestBytes)
        nextSessionNumber += 1
        sessions[session.number] = session
        connectionsByUID[principal, default: 0] += 1
        do {
            try session.start()
        } catch {
            session.close(flush: false)
        }
    }

    /// Flushes and closes `stream`, closing it outright if that takes past the deadline. A
    /// session's own stream (`uid`: its principal's) keeps the session's slot until then, and the session
    /// hands over the `releasing` bytes it counted: they leave the total as the stream's
    /// queue joins it, in one change, so the total neither dips under the bound (resuming
    /// paused connections while these bytes are still held) nor counts them twice.
    func flushing(_ stream: PipeStream, uid: UInt32? = nil, releasing: Int = 0) {
        let id = ObjectIdentifier(stream)
        let held = closing.add(
            stream, deadline: QueryClock.now() + ControlServer.flushDeadline, uid: uid, epoch: stallEpoch)
        if let uid { connectionsByUID[uid, default: 0] += 1 }
        buffered(held - releasing, by: nil)
        stream.shutdownAndClose { [weak self] in
            self?.flushEnded(id)
            self?.daemon.checkStopped()
        }
        if reaper == nil, let t = try? EventLoop.Timer(loop: daemon.loop) {
            reaper = t
            try? t.start(after: 1, repeating: 1) { [unowned self] in reap() }
        }
    }

    private func reap() {
        for id in closing.expired(now: QueryClock.now()) {
            logger.warning("closing a connection that did not take its last replies")
            flushEnded(id)?.close()
        }
        if closing.isEmpty {
            reaper?.close()
            reaper = nil
        }
    }

    /// A closing stream is gone (flushed, or closed at its deadline or over the total): its
    /// bytes and slot are free. Returns the stream, for a caller to close.
    @discardableResult private func flushEnded(_ id: ObjectIdentifier) -> PipeStream? {
        guard let f = closing.remove(id) else { return nil }
        buffered(-f.counted, by: nil)
        if let uid = f.uid { slotFreed(uid) }
        return f.stream
    }

    /// Closing streams drain with no session to count it: recounted at each turn's end and
    /// every second, which also notes which of them took bytes this epoch.
    private func recountClosing() {
        let delta = closing.recount(epoch: stallEpoch)
        if delta != 0 { buffered(delta, by: nil) }
    }

    private func slotFreed(_ uid: UInt32) {
        connectionsByUID[uid] = connectionsByUID[uid] == 1 ? nil : connectionsByUID[uid].map { $0 - 1 }
    }

    func remove(_ session: Session) {
        guard sessions.removeValue(forKey: session.number) != nil else { return }
        slotFreed(session.identity.principal)
        shareEnded(session.user)
        // Its queries that wait for a thread, and pool jobs for a turn, will never be read:
        // they are dropped unrun.
        queries?.cancel(connection: session.number)
        daemon.pool.cancel(connection: session.number)
        // Its leases end with it (assetd(8)); their files' unlinks are rescheduled by the sweep.
        leasesEnded(holder: session.number)
        // Its calls waiting their uid's lease turn too (each holds its params); last, as
        // counting them out may end a stop.
        leasedTurns.drop(connection: session.number)
        daemon.checkStopped()
    }

    /// Ends the leases of the connection numbered `holder` (it closed).
    func leasesEnded(holder: UInt64) {
        daemon.leasesEnded(daemon.store.leases.releaseAll(holder: holder))
    }

    /// Has `session`'s replies written at the end of this turn.
    func flushAtTurnEnd(_ session: Session) {
        unflushed.append(session)
    }

    /// After a connection's requests ran (Session.pump, at the end of its callback): over the
    /// total bound, the turn's replies so far are written now.
    /// Then what held the total up is either gone to the kernel or backlog a drop can choose;
    /// a turn's unwritten replies never exceed the bound by more than one connection's pump.
    func pumpEnded() {
        if overTotal { flushReplies() }
    }

    /// The turn's replies go to the kernel; over the total, a connection behind is dropped.
    private func turnEnded() {
        flushReplies()
        if !closing.isEmpty { recountClosing() }
        if overTotal { shedBacklogs() }
        parseGate.resume()
    }

    /// Every second: connections over their own bound since the last one can be dropped.
    func secondPassed() {
        if EpochStep.due() { stallEpoch += 1 }  // always, but in a test that steps it
        logRefusals()
        if !closing.isEmpty { recountClosing() }
        if overTotalBesideEvents { dropIdleLines() }
        if lineBytes > 0 { passIdleLineTurns() }
        if overTotal { shedBacklogs() }
    }

    /// Hands each session's replies of this turn to the kernel. A flush can close a session,
    /// and what that ends can write to others: they are flushed in the same pass.
    private func flushReplies() {
        guard !unflushed.isEmpty else { return }
        assert(!flushingReplies, "flushReplies re-entered")
        flushingReplies = true
        defer { flushingReplies = false }
        var i = 0
        while i < unflushed.count {
            let session = unflushed[i]  // its flush may append to `unflushed`
            session.turnEnded()
            i += 1
        }
        unflushed.removeAll(keepingCapacity: unflushed.capacity <= 256)
    }

    /// Writes the progress lines the pool threads queued to their connections.
    func deliverProgress() {
        for (number, line) in progress.takeAll() { sessions[number]?.send(progress: line) }
    }

    /// What a method called on `session` runs with.
    func context(for session: Session) -> MethodContext {
        // Kept by the session until a reload: the admin test hashes the caller's groups, and
        // each config field read through the unowned daemon is a retain and a release (about
        // 1,000 instructions a touching get in all).
        var context: MethodContext
        if let kept = session.keptContext {
            context = kept
        } else {
            let identity = session.identity
            let admin = identity.isAdmin(uids: daemon.config.adminUIDs, groups: daemon.config.adminGroups)
            context = MethodContext(
                store: daemon.store,
                caller: Caller(
                    uid: identity.uid, userName: identity.userName, isAdmin: admin, gids: identity.gids,
                    principal: identity.principal),
                enforceOwnership: daemon.config.enforceOwnership, connection: session.number)
            context.replyLimit = daemon.config.limits.maxReplyBytes
            context.leaseBounds = daemon.config.limits.leaseBounds
            // A non-admin's connections share half of all leases' entries (assetd.toml(5)).
            if !admin {
                context.leaseBounds?.perUser = max(1, UserShare.share(of: daemon.config.limits.totalLeaseEntries))
                if identity.principal != identity.uid { context.leaseBounds?.sharer = identity.principal }
            }
            context.cascadeLimit = admin ? nil : daemon.config.limits.cascadeLimit
            session.keptContext = context
        }
        context.lastCommit = daemon.lastCommit
        return context
    }

    /// A reload may have changed who is an admin and whether ownership is enforced: every
    /// session's kept context is made again at its next request.
    func settingsReloaded() {
        for session in sessions.values { session.keptContext = nil }
        refusals.forgetAdmins()
    }

    /// Closes the non-admins' connections that the ranges just read count as another principal
    /// than the one they were counted as: connections opened as K subuids of a range not yet
    /// in the file (a new user's, before the SIGHUP) would keep K users' slots for as long as
    /// they stay, with no idle timeout. They reconnect and are counted anew; the counts stay
    /// consistent, as each session gives back what it was counted as.
    func subordinatesReloaded() {
        let (ranges, config) = (daemon.subordinates, daemon.config)
        let moved = sessions.values.filter {
            ranges.principal(of: $0.identity.uid) != $0.identity.principal && !$0.identity.isAdmin(config)
        }
        guard !moved.isEmpty else { return }
        daemon.logger.notice(
            "closing \(moved.count) connections that control.subuid_file now counts as another user")
        for session in moved { session.close(flush: true) }
    }

    /// Queues a put for the next group commit; `done` runs on the loop once it is durable or
    /// has failed. Counted as in flight until then.
    func put(
        _ params: Params, _ context: MethodContext, bytes: Int,
        done: @escaping (Result<MethodOutcome, RPCError>) -> Void
    ) {
        guard let puts else {
            done(.failure(RPCError(code: RPCError.internalErrorCode, message: "the put pipeline is not running")))
            return
        }
        daemon.workStarted()
        puts.enqueue(params, context, bytes: bytes, done: done)
    }

    /// Runs `work` on a query thread and `done` back on the loop, counted as in flight.
    func submitQuery(
        uid: UInt32, admin: Bool, connection: UInt64, _ work: @escaping @Sendable () -> Void,
        done: @escaping () -> Void
    ) {
        guard let queries else {
            done()
            return
        }
        daemon.workStarted()
        queries.submit(uid: uid, admin: admin, connection: connection, work) { [unowned self] in
            done()
            daemon.workEnded()
        }
    }

    /// Whether all connections together hold more than control.total_buffer_bytes: then none
    /// is read until they hold less. Kept as the total changes: read after every pump, every
    /// write outside one and by every connection's bounds.
    @exclusivity(unchecked) private(set) var overTotal = false

    /// Whether the connections hold more than the total without their unfinished lines: only
    /// then are those behind dropped (shedBacklogs, Session.send). Dropping a reader frees
    /// none of another's lines: with them in, a user's connections each holding part of a
    /// line, paused, kept the total passed, and every slow reader of every user was dropped.
    var overTotalHeld: Bool { bufferedTotal - lineBytes > limits.totalBufferBytes }
    /// Over the total with events aside too: dropping watchers cannot bring it under.
    var overTotalWithoutEvents: Bool { bufferedTotal - lineBytes - eventBytes > limits.totalBufferBytes }
    /// Over the total, unfinished lines counted and events aside (dropIdleLines).
    private var overTotalBesideEvents: Bool { bufferedTotal - eventBytes > limits.totalBufferBytes }

    /// `session` holds `delta` more bytes. Back under the total, paused connections are read
    /// again; over it, the turn's end and the next second drop those behind (shedBacklogs).
    func buffered(_ delta: Int, by session: Session?) {
        let wasOver = overTotal
        bufferedTotal += delta
        if delta < 0 { releasedSinceTrim -= delta } else if bufferedTotal > peakTotal { peakTotal = bufferedTotal }
        overTotal = bufferedTotal > limits.totalBufferBytes
        if wasOver && !overTotal {
            for s in sessions.values where s.readingPaused && s !== session { s.updateReading() }
        }
    }

    /// While over the total (unfinished lines aside: overTotalHeld), drops connections behind
    /// (Session.isBehind) until under it or none is behind: first those of a user held to a
    /// share and over it, the most held back first, so the victim is chosen within the user
    /// that holds the total over; then, while what is not events is over the total alone, the
    /// closing connections and then the open ones, the largest backlog first in each; and
    /// only then, while events make the difference, the watchers holding events, the one
    /// holding the oldest first. Events over the total are the watchers' to give up (one can
    /// watch again and read the state anew), never a reader's replies: by its backlog alone,
    /// a big reply not yet read went before any watcher (a slice refused at most), and other
    /// users' big deletes dropped an admin reading a query's reply. Nor does a watcher pay for
    /// replies that hold the total over alone: dropping it could not bring the total under
    /// (docs/DESIGN.md, Connections).
    /// Only those behind: bytes just refused by the kernel (a big reply, a turn's pipelined
    /// replies) say nothing about a client that reads, and would make the one that asked
    /// most the victim; and one under its own bound is within what it was allowed. Each
    /// connection is held to its own bound meanwhile (reading stops past it).
    /// Closing connections go before open ones: the daemon already closed them. Behind for
    /// one means the daemon could write none of its last replies to it since before the
    /// previous epoch (its own bound would never choose one closed for a too-long line: its
    /// last replies went out up to that bound before the line was answered).
    /// Its callers recount the closing connections first.
    private func shedBacklogs() {
        let epoch = stallEpoch
        guard noneBehindIn != epoch, sparedIn != epoch || overTotalWithoutEvents else { return }
        dropOverShare(epoch: epoch)
        while overTotalWithoutEvents, let (id, f) = closing.worstBehind(epoch: epoch) {
            logger.warning(
                "dropping a closing connection that took none of its last replies for a second: \(f.counted) bytes waiting"
            )
            droppedConnections += 1
            flushEnded(id)?.close()
        }
        while overTotalWithoutEvents {  // a drop's release counts through buffered(), which updates it
            var victim: Session?
            for s in sessions.values where s.isBehind(epoch: epoch) && s.heldBack > (victim?.heldBack ?? 0) {
                victim = s
            }
            guard let worst = victim else { break }
            logger.warning(
                "dropping a connection (uid \(worst.identity.uid)) that does not read its replies: \(worst.backlog) bytes waiting"
            )
            droppedConnections += 1
            worst.close(flush: false)
        }
        if eventBytes > 0, overTotalHeld, !overTotalWithoutEvents { dropWatchersBehind(epoch: epoch) }
        // Still over without events: the loops above found none behind. Over by events only:
        // those behind left are spared till the rest go over alone, or the epoch advances.
        if overTotalWithoutEvents { noneBehindIn = epoch } else if overTotalHeld { sparedIn = epoch }
    }

    /// Over the total, drops the connections behind of the users held to a share and over
    /// it, the most held back first, while over the total: a user's connections are read
    /// past its share while they hold nothing, so one non-admin's replies not taken (each
    /// connection's get of a big value) could hold the total over, alone or with others'
    /// events, and the drops fell on others' watchers.
    private func dropOverShare(epoch: Int) {
        let share = parseGate.share
        while overTotalHeld {
            var victim: Session?
            for s in sessions.values
            where s.heldToShare && s.user.buffered > share && s.isBehind(epoch: epoch)
                && s.heldBack > (victim?.heldBack ?? 0)
            {
                victim = s
            }
            guard let worst = victim else { return }
            logger.warning(
                "dropping a connection (uid \(worst.identity.uid)) over its user's share that does not read its replies: \(worst.heldBack) bytes held back"
            )
            droppedConnections += 1
            worst.close(flush: false)
        }
    }

    /// While events alone hold the total over, drops the watchers behind that hold some, the
    /// one holding the oldest first (the most waiting first among those), until under it: the
    /// oldest events are held by the watchers furthest behind alone.
    private func dropWatchersBehind(epoch: Int) {
        let behind = sessions.values.filter { $0.oldestHeld != nil && $0.isBehind(epoch: epoch) }.sorted {
            ($0.oldestHeld ?? .max, -$0.heldBack) < ($1.oldestHeld ?? .max, -$1.heldBack)
        }
        for s in behind where !s.closed {
            guard overTotalHeld, !overTotalWithoutEvents else { return }
            logger.warning("dropping a watcher (uid \(s.identity.uid)) that does not read its events")
            droppedConnections += 1
            s.close(flush: false)
        }
    }

    /// While over the total, unfinished lines counted and events aside (they have their own
    /// valve, the watchers' drops), closes the connections read whose line got no byte for a
    /// second (Session.lineIdle), the largest line first, until under it. Past the total each uid reads on in one line, and uids are not scarce: 1,016 uids
    /// each sending 1 MiB of a line and then nothing held about 1 GiB. One that sends, or that
    /// is paused (it cannot send), is never closed for this.
    private func dropIdleLines() {
        let epoch = stallEpoch
        let idle = sessions.values.filter { $0.lineIdle(epoch: epoch) }.sorted { $0.unfinishedLine > $1.unfinishedLine }
        for s in idle {
            guard overTotalBesideEvents else { break }
            guard s.lineIdle(epoch: epoch) else { continue }  // a close before may have passed it a turn
            logger.warning(
                "dropping a connection (uid \(s.identity.uid)) whose unfinished line got no byte for a second: \(s.unfinishedLine) bytes held"
            )
            droppedConnections += 1
            s.close(flush: false)
        }
    }

    /// A session dropped itself for events it did not take (stats' dropped_connections).
    func noteDropped() { droppedConnections += 1 }

    /// A reply of `bytes` was made (or refused) off the loop: its memory is free again.
    func released(_ bytes: Int) {
        if bytes >= 1 << 20 { releasedSinceTrim += bytes }
    }

    /// Hands freed memory back to the system once a lot was freed and little is held:
    /// malloc keeps the arenas of the threads that built big replies otherwise, and the
    /// daemon would stay at its peak while idle.
    /// Every second: a query whose client hung up after half-closing stops, and a connection
    /// whose pool job waits for its turn closes (the end of input came first, when the peer
    /// could still read).
    func stopOrphanedQueries() {
        for s in sessions.values { s.stopQueryIfHungUp() }
    }

    /// Stops every running and waiting query (the daemon is stopping): each answers
    /// query_rejected at its next progress check.
    func stopQueries() {
        for s in sessions.values { s.stopQuery() }
    }

    func trimMemory() {
        guard releasedSinceTrim >= 16 << 20, bufferedTotal < 1 << 20 else { return }
        releasedSinceTrim = 0
        _ = mallocTrim(0)
    }

    /// After a method: events for what it committed or swept, and the daemon's follow-ups.
    func after(_ outcome: MethodOutcome) {
        published(outcome.commits)
        if let sweep = outcome.sweep { daemon.reportSweep(sweep) }
        if case .shutdown = outcome.action { daemon.beginStop("a shutdown request") }
    }

    /// Commits made (by a method, or a group commit): ping's last commit moves, watchers get
    /// their events, and the files they queued are swept.
    func published(_ commits: [CommitReport]) {
        for report in commits {
            daemon.noteCommit(report.commit)
            broadcast(.commit(report))
            if !report.filesQueued.isEmpty { daemon.scheduleSweep() }
        }
    }

    func recordLatency(_ seconds: Double) {
        latencies[latencyCount % latencies.count] = seconds
        latencyCount += 1
        requests += 1
    }

    func stopAccepting() {
        listener?.close()
        listener = nil
    }

    var allIdle: Bool { sessions.values.allSatisfy(\.isIdle) }

    /// Refuses what is still queued, flushes replies and closes every connection.
    func closeAll() {
        progress.close()
        puts?.stop()  // every put has been answered: the daemon waited for them
        puts = nil
        queries?.stop()  // nothing runs or waits on it: the daemon waited for every request
        queries = nil
        turnHook?.close()
        turnHook = nil
        pollHook?.close()
        pollHook = nil
        pointReader = nil  // ends its snapshot, so the checkpoint at shutdown can truncate
        for s in Array(sessions.values) {
            s.refuseQueued()
            s.close(flush: true)
        }
        unflushed = []
    }
}
