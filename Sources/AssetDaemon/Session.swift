// One client connection: splits lines, runs its requests one at a time in order (so a
// pipelined request sees the effects of the ones before it), writes replies in order, and
// sends events when watching. Loop-bound. What a connection holds is counted in bytes: a
// client over its bounds (requests read and not run, replies not taken) is not read until it
// is under them again, and a watcher that falls far behind is dropped; other clients never
// wait for either (assetd.toml(5), [control]). How a request runs is in Session+Run.swift.

import AssetService
import AssetStore
import ControlProtocol
import EventLoop
import Foundation
import JSON

// Its stored properties are used on the loop thread only, each access short and none
// overlapping another (none is passed inout to code that can reach it again), so the runtime's
// exclusivity tracking of them is off: about 20 checks a request. The compiler's static
// checks still apply.
final class Session {
    /// Drop a watcher with more than this of events waiting behind those of the commit it is
    /// being given, once it is behind, if it is not an admin's, or over the total
    /// (ControlServer.dropLaggingWatchers).
    static let eventBacklogLimit = 16 << 20
    /// A watcher is given more of its events while less than this (or its own output bound,
    /// if less) of its output is untaken: one commit's 30 MB of events, copied whole into
    /// every watcher's buffer, dropped each of them as a watcher that does not read.
    static let eventSlice = 256 << 10
    /// Events one watcher is given (or passes over, for its filter) at a call, the rest at
    /// the next loop turn: a bystander's ping waits for at most this many per watcher.
    static let eventsPerTurn = 2048
    /// Stop reading while this many requests wait to run, however small.
    static let queuedRequestLimit = 4096
    /// What a parsed request costs beyond its line, counted against the input bound.
    static let requestOverhead = 128
    /// Requests of lines up to this are counted by their line while they run: parsed, one holds
    /// at most a few dozen KiB, and weighing every small request would cost it a walk of its
    /// params on the loop.
    static let weighedLineLimit = 1024
    /// Lines longer than this are parsed on the pool when their turn comes, not on the loop:
    /// a client pipelining megabyte puts would hold every other client for each parse.
    static let parseOnLoopLimit = 64 << 10
    /// Lines parsed as they are read wait behind the one to run for up to this much text
    /// (with their bookkeeping), the rest as text: parsed, `[0,0,…]` holds about twelve times
    /// what it is counted for. A read of 64 KiB of such lines behind a put held about 760 KiB.
    static let parsedAheadLimit = 4 << 10
    /// Items one connection may run per loop turn before the others get theirs.
    static let itemsPerTurn = 512
    /// The output buffer's capacity kept once it is written out: a few small replies' worth,
    /// so an idle connection holds little.
    static let keptOutputCapacity = 2048

    unowned let server: ControlServer
    unowned let daemon: Daemon
    /// The daemon's number for this connection: the holder of its leases.
    let number: UInt64
    let stream: PipeStream
    let identity: PeerIdentity
    /// What this connection's uid holds with its others (the share of the total it may take).
    let user: UserShare
    /// Not an admin's when it connected: paused past its uid's share (admins are trusted with
    /// the whole total, as with the connections kept for them).
    let heldToShare: Bool
    @exclusivity(unchecked) private var framer: LineFramer
    /// Not reloaded: read once, not through the unowned daemon at every request.
    let limits: ControlLimits
    /// What arrived and waits to run, in order; `head` is the next to run (removeFirst on a
    /// big array would make a flood of tiny lines quadratic).
    private enum Item {
        case request(Result<RPCRequest, RPCFailure>, bytes: Int)
        /// A line kept as it came, parsed when its turn comes: off the loop if long; or read
        /// while a request ran, past 4 KiB parsed ahead, or over 1 KiB without room at the
        /// gate (parsed, it would hold many times what it is counted for).
        case unparsed([UInt8], bytes: Int)
        /// A line over the limit: answered after everything before it, then the connection closes.
        case tooLong
        /// Taken to run: its memory is released at once, not when the queue is compacted.
        case taken
    }
    @exclusivity(unchecked) private var queue: [Item] = []
    @exclusivity(unchecked) private var head = 0
    /// Bytes of the requests read and not yet taken to run.
    @exclusivity(unchecked) private(set) var inputBytes = 0
    /// What the request taken to run holds, counted with the input until it is answered: its
    /// line while it waits to be parsed, then what it holds parsed (a put's params stay in the
    /// group commit until synced, a pool job's until it ran), which for `[0,0,…]` is about
    /// twelve times its line.
    @exclusivity(unchecked) var runningBytes = 0 {
        didSet { gate.changed(by: runningBytes - oldValue, of: user) }
    }
    /// The server's gate on parsing long lines (held here: read at every change of `runningBytes`).
    let gate: ParseGate
    /// The next line waits for the gate (ParseGate.admits), which pumps this session again.
    @exclusivity(unchecked) var waitingToParse = false
    /// The gate lets the waiting line in at this pump (ParseGate.resume).
    @exclusivity(unchecked) var letIn = false
    /// What the gate counts for the line being parsed beyond its length: what it may parse
    /// into (ParseGate.reserve).
    @exclusivity(unchecked) var parseReserve = 0
    /// What this session last added to the server's count of buffered bytes.
    @exclusivity(unchecked) private var accounted = 0
    /// Of `accounted`, its unfinished line (the server's `lineBytes`).
    @exclusivity(unchecked) private var accountedLine = 0
    /// Paused for its unfinished line while another connection of its uid reads on in its
    /// own (UserShare.lineWaiting holds it).
    @exclusivity(unchecked) var waitsForLine = false
    /// The server's epoch in which this connection was last read a byte, or let read again
    /// after a pause (paused, it could send nothing): its unfinished line is idle once a
    /// whole epoch has passed since (lineIdle).
    @exclusivity(unchecked) var lineGrewIn = 0
    /// Bytes read in the epoch `growthEpoch`: a line grows for `lineGrewIn` only by
    /// `lineGrowthFloor` a second (a byte a second held the total over for ever, and every
    /// other client's paused line was closed instead).
    @exclusivity(unchecked) private var growthBytes = 0
    @exclusivity(unchecked) private var growthEpoch = 0
    static let lineGrowthFloor = 4096
    /// Replies produced this loop turn, written in one go at its end (a flood of pipelined
    /// requests, or the replies of one wake-up, cost one write, not one per reply).
    @exclusivity(unchecked) private var out: [UInt8] = []
    /// True while pumping: the pump counts and queues its replies once, at its end.
    @exclusivity(unchecked) private var batching = false
    /// The server will write `out` at the end of this loop turn (ControlServer.flushReplies).
    @exclusivity(unchecked) private var flushQueued = false
    /// True while `writeRendered` lends `out` to a renderer: a write then would splice a line
    /// into the reply being rendered (debug builds stop on it).
    @exclusivity(unchecked) private var rendering = false
    /// The server's epoch since which the backlog has been over this connection's own bound,
    /// or nil while it is not.
    @exclusivity(unchecked) private var overBoundSince: Int?
    /// The bytes the kernel refused when last noted: fewer since, the client took some.
    @exclusivity(unchecked) private var lastRefused = 0
    /// Runs the rest of a long queue on the next loop turn.
    @exclusivity(unchecked) private var continuation: EventLoop.Timer?
    private var queuedCount: Int { queue.count - head }
    /// A request is running off the loop (or waits for its group commit): the next waits.
    @exclusivity(unchecked) var running = false
    @exclusivity(unchecked) private(set) var readingPaused = false
    /// The peer closed its end: finish what runs, then close.
    @exclusivity(unchecked) private var peerEnded = false
    @exclusivity(unchecked) private(set) var closed = false
    /// The query this connection runs in the query lane, stopped if the connection closes.
    @exclusivity(unchecked) var runningQuery: QueryCancellation?
    @exclusivity(unchecked) var watching: EventFilter?
    /// Broadcasts this watcher has not taken all of, in order, from `pendingHead`: it is given
    /// the first's from `nextEvent` on as it takes what it was given (deliver). Shared with the
    /// other watchers. Taken ones are set to nil and the list compacted now and then, as
    /// `queue` is: one stalled watcher collects one a commit, and removeFirst on 150,000 of
    /// them moved the whole array at each.
    @exclusivity(unchecked) private var pending: [EventLines?] = []
    @exclusivity(unchecked) private var pendingHead = 0
    @exclusivity(unchecked) private var nextEvent = 0
    private var hasPending: Bool { pendingHead < pending.count }
    /// The weight of the broadcasts waiting behind the first, counted in its uid's share as
    /// other bytes it holds are (the total counts each broadcast once, in ControlServer).
    @exclusivity(unchecked) private(set) var queuedWeight = 0 {
        didSet { userHolds(queuedWeight - oldValue) }
    }
    /// Gives the watcher more of its events at the next loop turn.
    @exclusivity(unchecked) private var deliveryTimer: EventLoop.Timer?
    /// A watch of this connection was refused and logged (ControlServer+Events.swift).
    var watchRefusalLogged = false
    /// The method this connection called last: a client calls one method over and over, and
    /// comparing its name costs less than hashing it for the table.
    @exclusivity(unchecked) var lastMethod: (name: String, method: MethodTable.Method)?
    /// What this connection's methods run with, made once and again after a reload
    /// (ControlServer.context(for:), settingsReloaded()).
    @exclusivity(unchecked) var keptContext: MethodContext?

    init(
        server: ControlServer, number: UInt64, stream: PipeStream, identity: PeerIdentity, user: UserShare,
        maximumLine: Int
    ) {
        self.server = server
        self.user = user
        heldToShare = !identity.isAdmin(server.daemon.config)
        daemon = server.daemon
        limits = server.daemon.config.limits
        gate = server.parseGate
        self.number = number
        self.stream = stream
        self.identity = identity
        framer = LineFramer(maximumLength: maximumLine)
        lineGrewIn = server.stallEpoch
    }

    func start() throws(UVError) {
        try stream.startReading({ [unowned self] bytes in onData(bytes) }, onEnd: { [unowned self] _ in onEnd() })
    }

    private func onData(_ bytes: UnsafeRawBufferPointer) {
        let epoch = server.stallEpoch
        if growthEpoch != epoch { (growthEpoch, growthBytes) = (epoch, 0) }
        growthBytes += bytes.count
        // A line begun in this read has its second, however short.
        if growthBytes >= Session.lineGrowthFloor || framer.pendingCount == 0 { lineGrewIn = epoch }
        // Lines are parsed where they lie only if they run next or wait behind little, and,
        // over a kilobyte, only if the gate has room: the rest wait counted by their length,
        // and `[0,0,…]` parsed holds about twelve times that. Long ones are parsed off the loop.
        framer.feed(bytes) { piece in
            switch piece {
            case .line(let line):
                let bytes = line.count + Session.requestOverhead
                let weighed = line.count > Session.weighedLineLimit
                if !running, line.count <= Session.parseOnLoopLimit,
                    inputBytes == 0 || (!weighed && inputBytes + bytes <= Session.parsedAheadLimit),
                    !weighed || gate.hasRoom(for: ParseGate.reserve(bytes, limits), self)
                {
                    queue.append(.request(RPCRequest.parse(line), bytes: bytes))
                } else {
                    queue.append(.unparsed(Array(line), bytes: bytes))
                }
                inputBytes += bytes
            case .tooLong:
                queue.append(.tooLong)
                stream.stopReading()
            }
        }
        pump()
    }

    private func onEnd() {
        peerEnded = true
        stopQueryIfHungUp()
        pump()
    }

    /// Once its peer has closed both ways (no reply can reach it), stops this connection's
    /// running query, and closes it if its pool job still waits for a turn: the job is
    /// dropped unrun, with what it holds. A peer that only half-closed still reads, and gets
    /// its answer.
    func stopQueryIfHungUp() {
        guard peerEnded, !closed, runningQuery != nil || running, stream.peerHungUp else { return }
        runningQuery?.cancel()
        if daemon.pool.isWaiting(connection: number) { close(flush: false) }
    }

    /// Stops this connection's query, running or waiting for a lane thread.
    func stopQuery() {
        runningQuery?.cancel()
    }

    /// Runs queued requests until one has to wait for the thread pool, or until replies pile
    /// up unread (then the write completions resume it).
    func pump() {
        batching = true
        defer {
            batching = false
            if out.isEmpty || closed {
                settle()
            } else {
                // Written at the end of the turn (turnEnded settles then); judged now, the
                // bounds stop reading at once if this turn went over them.
                queueFlush()
                updateReading()
            }
            // Every pump is the last thing its callback does (a read, a continuation, a
            // write completion, an answer from the group commit or a thread).
            server.pumpEnded()
        }
        var budget = Session.itemsPerTurn
        // Not while events wait to be given: a commit's events arrive together.
        taking: while !running, !closed, head < queue.count, outputBytes <= limits.connectionOutputBytes,
            !hasPending
        {
            guard budget > 0 else {
                yieldTurn()
                break
            }
            budget -= 1
            // Moved out, not copied: a copy and the slot's overwrite each retained and released
            // every part of the request.
            var item = Item.taken
            swap(&item, &queue[head])
            head += 1
            switch item {
            case .taken:
                break
            case .request(let parsed, let bytes):
                inputBytes -= bytes
                runTaken(parsed, counted: bytes)
            case .unparsed(let line, let bytes):
                // Any line over a kilobyte waits at the gate: a short one parsed on the loop
                // holds up to twelve times its text too, and every connection may run one.
                let long = line.count > Session.parseOnLoopLimit
                let gated = line.count > Session.weighedLineLimit
                let reserve = gated ? ParseGate.reserve(bytes, limits) : 0
                if gated, !gate.admits(reserve, self) {
                    swap(&item, &queue[head - 1])  // put back, to be taken when the gate pumps
                    head -= 1
                    break taking
                }
                inputBytes -= bytes
                if long {
                    runningBytes = bytes
                    parseReserve = reserve - bytes
                    gate.changed(by: parseReserve, of: user)
                    parseOffLoop(line, counted: bytes)
                } else {
                    runTaken(line.withUnsafeBufferPointer { RPCRequest.parse($0) }, counted: bytes)
                }
            case .tooLong:
                write(RPCLine.error(id: .null, .requestTooLarge(limit: framer.maximumLength)))
                close(flush: true)
                return
            }
        }
        if head == queue.count {
            // A connection's queue is empty most of the time: its array goes with it.
            queue.removeAll(keepingCapacity: queue.capacity <= 64)
            head = 0
        } else if head > 1024 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    func write(_ bytes: [UInt8]) {
        assert(!rendering, "a write while a reply is rendered into the output buffer")
        guard !closed else { return }
        // The usual single reply is moved, not copied.
        if out.isEmpty { out = bytes } else { out.append(contentsOf: bytes) }
        if !batching { queued() }
    }

    /// Appends one reply rendered straight into the output buffer, which keeps a small
    /// capacity between replies (a point read allocated and freed a line for each). `render`
    /// returns false to take back what it appended; it must not write to this session.
    func writeRendered(_ render: (inout [UInt8]) -> Bool) {
        // A render that wrote a reply of its own would splice two lines into one.
        assert(!rendering, "a reply written while another is being rendered")
        guard !closed else {
            // Rendered all the same: a touching read records its access, as it did before.
            var discarded = [UInt8]()
            _ = render(&discarded)
            return
        }
        let mark = out.count
        out.reserveMore(512)
        rendering = true
        let kept = render(&out)
        rendering = false
        if !kept { out.removeSubrange(mark...) }
        if !batching, !out.isEmpty { queued() }
    }

    /// Output added outside a pump: counted at once, as a write was (the total bound sees a
    /// turn's events as they come), and written at the turn's end, or at once while over the
    /// total (a turn's events to many watchers would otherwise all wait in memory). A pump
    /// counts once, at its end.
    private func queued() {
        account()
        // Not behind a backlog: the kernel, which refused that, would refuse these too.
        if server.overTotal, backlog == 0 { flushOut() }
        queueFlush()
    }

    /// Has the output written at the end of this loop turn, once however many replies join it.
    private func queueFlush() {
        guard !flushQueued else { return }
        flushQueued = true
        server.flushAtTurnEnd(self)
    }

    /// At the end of the turn: writes what this turn's replies left in the output buffer.
    func turnEnded() {
        flushQueued = false
        guard !closed else { return }
        flushOut()
        // The kernel took all it was given: no write completion will come to give it more.
        if hasPending, backlog == 0 { scheduleDelivery() }
        settle()
    }

    /// After the output was written (or there was none): what the connection does next.
    private func settle() {
        // Stopped at the output bound, and the kernel took it all: no write completion will
        // come to resume, so go on next turn.
        if !closed, !running, !waitingToParse, head < queue.count, outputBytes <= limits.connectionOutputBytes,
            !hasPending
        {
            yieldTurn()
        }
        // A half-closed peer still reads: it is closed once it has taken every reply, and
        // until then its bytes and its slot count against the limits like any connection's.
        if !closed, peerEnded, !running, head == queue.count, outputBytes == 0, !hasPending { close(flush: false) }
        // After the flush: judged before it, a reply the kernel then took whole would leave
        // the connection paused with no write completion to resume it.
        updateReading()
    }

    private func flushOut() {
        defer { account() }
        guard !out.isEmpty, !closed else { return }
        // Usually the kernel takes the whole reply at once: then nothing is queued, so there is
        // no completion to wait for (it would only resume reading, which nothing paused).
        let written = out.withUnsafeBytes { stream.tryWrite($0) }
        guard written < out.count else {
            out.removeAll(keepingCapacity: out.capacity <= Session.keptOutputCapacity)
            return
        }
        noteBacklog()  // seen under the bound before these bytes: that spell is over
        let bytes = out
        out = []
        stream.write(written == 0 ? bytes : Array(bytes[written...])) { [weak self] error in self?.writeCompleted(error)
        }
        noteBacklog()
    }

    /// Notes whether the bytes the kernel refused are over the connection's own bound now, or,
    /// while events wait to be given to it, whether the kernel refused any: from when it last
    /// took some (a watcher that reads slowly is not behind).
    private func noteBacklog() {
        let refused = backlog
        defer { lastRefused = refused }
        if refused <= limits.connectionOutputBytes && (!hasPending || refused == 0) {
            overBoundSince = nil
        } else if overBoundSince == nil || (hasPending && refused < lastRefused) {
            overBoundSince = server.stallEpoch
        }
    }

    /// Whether bytes the kernel refused have been over the connection's own bound since
    /// before the server's previous epoch began (a second or more), or for a watcher with
    /// events waiting, whether the kernel has refused some of them since then, taking none:
    /// only such a connection is dropped over the total bound. A big
    /// reply to a client that reads goes under the bound as fast as the client reads; one
    /// under its bound is never dropped.
    func isBehind(epoch: Int) -> Bool {
        noteBacklog()
        guard let since = overBoundSince else { return false }
        return since + 1 < epoch
    }

    /// Replies and events not yet taken by the client.
    var outputBytes: Int { out.count + backlog }

    /// Replies and events the kernel would not take: how far the client is behind. Those in
    /// `out` have not been offered yet (they are written at the end of the turn).
    var backlog: Int { closed ? 0 : stream.writeQueueSize }

    /// Bytes of its request line not yet ended.
    var unfinishedLine: Int { closed ? 0 : framer.pendingCount }

    /// Whether this connection is read and holds an unfinished line that got no byte since
    /// before the server's previous epoch began (a second or more, as isBehind): its turn in
    /// line passes on, and over the total it is closed (ControlServer.dropIdleLines).
    func lineIdle(epoch: Int) -> Bool {
        !closed && !readingPaused && framer.pendingCount > 0 && lineGrewIn + 1 < epoch
    }

    /// Bytes this connection holds: requests waiting or running, a partial line, replies not taken.
    var bufferedBytes: Int { closed ? 0 : inputBytes + runningBytes + framer.pendingCount + outputBytes }

    /// Brings the server's total up to date with what this connection holds now.
    private func account() {
        let line = closed ? 0 : framer.pendingCount
        if line != accountedLine {
            server.lineBytes += line - accountedLine
            accountedLine = line
        }
        let now = bufferedBytes
        guard now != accounted else { return }
        let delta = now - accounted
        accounted = now
        userHolds(delta)
        server.buffered(delta, by: self)
    }

    /// Lets other connections run, then goes on with this one's queue.
    private func yieldTurn() {
        if continuation == nil { continuation = try? EventLoop.Timer(loop: daemon.loop) }
        do {
            try continuation?.start(after: 0) { [unowned self] in pump() }
        } catch {
            // The peer did nothing wrong: this turn's replies, not yet written, go out first.
            close(flush: true)
        }
    }

    private func writeCompleted(_ error: UVError?) {
        guard !closed else { return }
        // A failed write (the peer is gone) ends the session; pumping on would only recurse
        // through more failing writes.
        if error != nil {
            close(flush: false)
            return
        }
        noteBacklog()
        if hasPending { deliver() }
        if !running && (queuedCount > 0 || peerEnded) { pump() } else { updateReading() }
    }

    /// Sends a progress notification (the request asked for it and has not been answered yet).
    func send(progress line: [UInt8]) {
        write(line)
    }

    /// Queues a broadcast's events for this watcher, given to it as it takes them (deliver); one
    /// whose filter takes none of them is not queued behind others, nor counted against it (one
    /// that waits for none is given it at once, passing over its events, and is not asked: it
    /// would cost every filtered watcher a second look at each small commit). A watcher with more
    /// than 16 MiB of events waiting behind those it is being given is dropped if it is not an
    /// admin's, whatever it reads (one that trickled held every user's events up to the total), or
    /// if it took none of its last slice for a second. Over the total, the broadcast then drops
    /// such watchers, the one holding the oldest events first (ControlServer.dropLaggingWatchers):
    /// dropped here in the order of `sessions`, a user's watchers pinning old events let the
    /// readers of every other user go first. The events of one commit, however many, never drop one
    /// that reads.
    func send(_ lines: EventLines) {
        guard !closed, let filter = watching else { return }
        if hasPending {
            if filter.types != nil || filter.collections != nil, !lines.takesAny(filter) { return }
            queuedWeight += lines.weight
            if queuedWeight > Session.eventBacklogLimit, heldToShare || isBehind(epoch: server.stallEpoch) {
                daemon.logger.warning("dropping a watcher (uid \(identity.uid)) that does not read its events")
                server.noteDropped()
                close(flush: false)
                return
            }
        }
        lines.holders += 1
        pending.append(lines)
        if pending.count - pendingHead == 1 { deliver() }
    }

    /// Gives this watcher the events its filter takes, in order, while less than a slice of
    /// its output is untaken (and, over the total, only while the kernel refused none of it),
    /// looking at most at eventsPerTurn of them a call. The rest wait, shared: the write
    /// completion, or the next turn, gives more. So a watcher holds at most a slice of copies,
    /// and a commit's events cost the loop a bounded time a turn, not seconds at once.
    private func deliver() {
        guard !closed else { return }
        guard let filter = watching else { return dropPending() }
        assert(!rendering, "an event written while a reply is rendered into the output buffer")
        let slice = min(Session.eventSlice, limits.connectionOutputBytes)
        let all = filter.types == nil && filter.collections == nil
        let refused = backlog
        let overTotal = server.overTotalHeld  // unfinished lines do not hold watchers back
        let before = out.count
        let hadPending = hasPending
        var budget = Session.eventsPerTurn
        giving: while pendingHead < pending.count, let lines = pending[pendingHead] {
            while nextEvent < lines.count {
                // The drain gives more: the write completion, or the turn's end if the kernel took all.
                if out.count + refused >= slice || (overTotal && refused > 0) { break giving }
                guard budget > 0 else {
                    scheduleDelivery()
                    break giving
                }
                budget -= 1
                let i = nextEvent
                nextEvent += 1
                if !all, !lines.matches(i, filter) { continue }
                let line = lines.line(i)
                if out.isEmpty { out = line } else { out.append(contentsOf: line) }
            }
            pending[pendingHead] = nil
            pendingHead += 1
            nextEvent = 0
            if pendingHead == pending.count {
                pending.removeAll(keepingCapacity: pending.capacity <= 64)
                pendingHead = 0
            } else if pendingHead >= 64, pendingHead * 2 >= pending.count {
                pending.removeFirst(pendingHead)
                pendingHead = 0
            }
            if hasPending, let next = pending[pendingHead] { queuedWeight -= next.weight }
            server.release(lines)
        }
        // Requests that waited for the events run (a pump in progress goes on by itself).
        if hadPending, !hasPending, !batching, !running, head < queue.count { yieldTurn() }
        guard out.count > before, !batching else { return }  // a pump counts and flushes at its end
        account()
        // Over the total, written at once: a turn's events to many watchers do not wait in memory.
        if server.overTotal, refused == 0 { flushOut() }
        queueFlush()
    }

    /// Gives the watcher more of its events at the next loop turn.
    private func scheduleDelivery() {
        if deliveryTimer == nil { deliveryTimer = try? EventLoop.Timer(loop: daemon.loop) }
        // The peer did nothing wrong: its replies, not yet written, go out first.
        guard let timer = deliveryTimer else { return close(flush: true) }
        do {
            try timer.start(after: 0) { [unowned self] in
                let server = server  // settling may close this session, and free it
                deliver()
                // A half-closed watcher whose last turn passed over events, giving none, has
                // no write completion to come: it is closed here once it has taken all.
                if !closed, !hasPending { settle() }
                server.pumpEnded()
            }
        } catch {
            close(flush: true)
        }
    }

    /// Forgets the events waiting to be given (unwatched, or closed).
    func dropPending() {
        let held = pending[pendingHead...].compactMap { $0 }
        pending = []
        pendingHead = 0
        nextEvent = 0
        queuedWeight = 0
        for lines in held { server.release(lines) }
    }

    /// What a watcher leaves untaken, for choosing whom to drop over the total: the bytes the
    /// kernel refused and the events waiting behind those it is being given (of broadcasts
    /// its filter takes some of: only those are queued for it).
    var heldBack: Int { backlog + queuedWeight }

    /// The number of the oldest broadcast this watcher holds (EventLines.number), if any.
    var oldestHeld: Int? { hasPending ? pending[pendingHead]?.number : nil }

    /// Pauses reading while this connection is over a bound (requests waiting or running,
    /// replies not taken), or holds requests waiting or replies while all connections together
    /// are over theirs, or its uid's are over its share (one that holds nothing is read: a
    /// bystander's ping is answered), or, then, holds an unfinished line while another of its
    /// uid's connections reads on in its own; resumes when they drain.
    func updateReading() {
        account()
        guard !closed, !peerEnded, !framer.overflowed else {
            // Read no more: a half-closed or overflowed reader kept its uid's turn till it closed.
            if user.lineReader === self { lineReaderDone() }
            return
        }
        let limits = limits
        let over = server.overTotal || (heldToShare && user.buffered > gate.share)
        // Over the total, one whose request runs is still read until it has input waiting:
        // paused, every client's request in flight (a bystander's stats) would pause it.
        var busy =
            outputBytes > limits.connectionOutputBytes || inputBytes + runningBytes > limits.connectionInputBytes
            || queuedCount > Session.queuedRequestLimit || (over && inputBytes + outputBytes > 0)
        // An unfinished line frees nothing until it is read to its end: read on in one of the
        // uid's at a time, the others waiting their turn. Read on in all, 250 connections of
        // one uid held 4 times its share; paused in all, a uid's lines (another's, over the
        // total) never ended.
        if over, !busy, framer.pendingCount > 0 {
            busy = !readsOnInLine()
        } else if user.lineReader === self {
            lineReaderDone()
        }
        if busy && !readingPaused {
            stream.stopReading()
            readingPaused = true
        } else if !busy && readingPaused {
            readingPaused = false
            lineGrewIn = server.stallEpoch
            do { try start() } catch { close(flush: true) }
        }
    }

    /// Its line got no byte for a second while others of its uid wait for the turn: it
    /// waits at the back of the line, paused, and the next is read on. Kept while idle, a
    /// client hung mid-line held every other line of its uid past the bounds (root's, over the
    /// total) for as long as it stayed open.
    func passLineTurn() {
        guard user.lineReader === self, !readingPaused else { return }
        stream.stopReading()
        readingPaused = true
        waitsForLine = true
        user.lineWaiting.append(self)
        lineReaderDone()
    }

    /// Answers every queued request with shutting_down (the daemon is stopping).
    func refuseQueued() {
        for item in queue[head...] {
            var parsed: RPCRequest?
            if case .request(.success(let r), _) = item { parsed = r }
            if case .unparsed(let line, _) = item,
                case .success(let r) = line.withUnsafeBufferPointer({ RPCRequest.parse($0) })
            {
                parsed = r
            }
            if let id = parsed?.id {
                write(RPCLine.error(id: id, RPCError.shuttingDown))
            }
        }
        queue = []
        head = 0
        inputBytes = 0
    }

    var isIdle: Bool { !running }

    #if DEBUG
    /// Requests waiting to run that were parsed when read (debug `stats`).
    var parsedWaiting: Int {
        queue[head...].count {
            if case .request = $0 { true } else { false }
        }
    }
    #endif

    func close(flush: Bool) {
        guard !closed else { return }
        runningQuery?.cancel()
        if flush { flushOut() } else { out = [] }  // a job still holding this session must not hold them too
        closed = true
        gate.forget(self)
        leaveLine()
        watching = nil
        dropPending()
        continuation?.close()
        continuation = nil
        deliveryTimer?.close()
        deliveryTimer = nil
        if flush {
            // A peer that never reads would hold the flush (and shutdown) forever: the server
            // closes it outright after a deadline. What this session counted moves to the
            // server's count of closing streams in one step (ControlServer.flushing).
            let counted = accounted
            accounted = 0
            server.lineBytes -= accountedLine
            accountedLine = 0
            userHolds(-counted)
            server.flushing(stream, uid: identity.principal, releasing: counted)
        } else {
            account()
            stream.close()
        }
        server.remove(self)
    }
}
