// How a session runs a request: as its method's table entry declares (Execution.swift), on
// the loop, as a point read, in the group commit, on the query lane or the pool (holding the
// maintenance slot when declared), and how the answer is written back. Loop-bound.

import AssetStore
import ControlProtocol
import JSON

extension Session {
    /// Runs `request` as its method's table entry declares (Execution.swift).
    func run(_ request: RPCRequest) {
        let started = QueryClock.now()
        if daemon.stopping {
            reply(request, .failure(.shuttingDown), started)
            return
        }
        let method: MethodTable.Method
        if let last = lastMethod, last.name == request.method {
            method = last.method
        } else {
            guard let found = MethodTable.methods[request.method] else {
                reply(request, .failure(.methodNotFound(request.method)), started)
                return
            }
            method = found
            lastMethod = (request.method, found)
        }
        // A call counted against its uid's lease quota: one of that uid's at a time, on the
        // pool. Asked of writes only (O(1) unless the uid holds a lease).
        if method.leaseCounting != .none, runCounted(method, request, started) { return }
        // Decided before the params are read: a point read takes them as they were read,
        // without a dictionary.
        switch method.execution {
        case .pointRead:
            pointRead(method, request, started)
        case .loop:
            reply(request, MethodTable.call(request.method, request.params, server.context(for: self)), started)
        case .groupCommit:
            // Its members as parsed: building the params' dictionary on the loop cost a put
            // about a tenth of the loop's work, and the put reads five names.
            running = true
            server.put(Params(request), server.context(for: self), bytes: runningBytes) { [self] result in
                running = false
                runningBytes = 0
                reply(request, result, started)
                pump()
            }
        case let execution:  // .pool, .queryLane, .maintenance
            runOffLoop(
                request, request.params, execution, server.context(for: self), started,
                write: method.leaseCounting == .write)
        }
    }

    /// Runs `request` on the pool or the query lane, holding the maintenance slot if declared;
    /// `counted` (drains or not): on the pool in its uid's turn for its lease quota (LeasedTurns);
    /// else a `write` that could grow what leases keep: a lease of its uid waits for it. With
    /// `members`, the method reads those instead of `params` (a point read's, kept unbuilt).
    func runOffLoop(
        _ request: RPCRequest, _ params: JSONValue, _ execution: Execution, _ context: MethodContext,
        _ started: Double, counted: Bool? = nil, write: Bool = false, members: Params? = nil
    ) {
        var context = context
        context.requestID = request.id
        var claim: MaintenanceSlot.Claim?
        if execution == .maintenance {
            // Refused before claiming: a non-admin's real run is told so, not told to skip.
            if let refusal = MethodTable.refusal(request.method, params, context.caller) {
                reply(request, .failure(refusal), started)
                return
            }
            // A non-admin may run only the read-only forms (dry runs, verify without repair),
            // in a slot of its principal's own.
            let principal = context.caller.principal
            switch daemon.maintenance.claim(request.method, readOnly: context.caller.isAdmin ? nil : principal) {
            case .success(let c): claim = c
            case .failure(let busy):
                reply(request, .failure(busy.error), started)
                return
            }
        }
        running = true
        if let id = request.id, params["progress"] == true {
            context.progress = server.progress.reporter(session: number, request: id)
        }
        if execution == .queryLane {
            runningQuery = QueryCancellation()
            context.queryCancellation = runningQuery
        }
        let box = Box<Result<MethodOutcome, RPCError>>()
        let line = Box<[UInt8]>()
        let (name, ctx, id) = (request.method, context, request.id)
        #if DEBUG
        let held = ["object.list", "edge.add", "object.get", "verify"].contains(request.method)
        #endif
        let work: @Sendable () -> Void = {
            #if DEBUG
            if held { PoolJobHold.wait() }
            #endif
            var result = members.map { MethodTable.call(name, $0, ctx) } ?? MethodTable.call(name, params, ctx)
            // The reply is built here, off the loop: a big one would stall every client. Not
            // one the daemon adds to on the loop (stats).
            if let id, case .success(var outcome) = result, !outcome.completedOnLoop {
                let bytes = RPCLine.result(id: id, outcome.result)
                // A write that committed (or a recorded touch) is answered whatever its size:
                // refusing its reply would tell the client it failed, and skip its events.
                if bytes.count > ctx.replyLimit, outcome.commits.isEmpty, !outcome.recordedAccess {
                    result = .failure(RPCError(StoreError.replyTooLarge(ctx.replyLimit)))
                } else {
                    line.value = bytes
                    outcome.result = .null  // its memory goes now, not with the reply
                    result = .success(outcome)
                }
            }
            if case .success(var outcome) = result, case .addDaemonStats = outcome.action {
                StatsReply.renderAhead(&outcome)
                result = .success(outcome)
            }
            box.value = result
        }
        // Answered without its params: a job dropped unrun (ControlServer.remove) frees them
        // with its work, not when its `done` runs.
        var answered = request
        answered.params = .null
        let done = { [self] in
            running = false
            runningBytes = 0
            runningQuery = nil
            // The connection's leases ended when it closed; one granted since ends now.
            if closed { server.leasesEnded(holder: number) }
            if let claim { daemon.maintenance.end(claim) }
            if claim != nil, case .success(let outcome)? = box.value {
                daemon.logChanges(of: "\(name) (uid \(identity.uid))", outcome.commits)
            }
            if claim != nil { daemon.logMinFreeCaps() }
            if case .failure(let e)? = box.value, e.stableCode == RPCError.Code.replyTooLarge.rawValue {
                server.released(ctx.replyLimit)
            }
            // Dropped unrun, its connection closed: no one to answer, not a request served.
            guard box.value != nil || !closed else { return }
            // Progress posted by the pool thread goes out before the reply that follows it.
            server.deliverProgress()
            reply(
                answered, box.value ?? .failure(RPCError(code: RPCError.internalErrorCode, message: "lost result")),
                started,
                built: line.value)
            pump()
        }
        if execution == .queryLane {
            server.submitQuery(uid: identity.principal, admin: ctx.caller.isAdmin, connection: number, work, done: done)
            return
        }
        if let drains = counted {
            let (daemon, uid, principal, connection) = (daemon, identity.uid, identity.principal, number)
            daemon.workStarted()  // a stop waits for it from now
            server.leasedTurns.submit(
                uid: uid, connection: number, drains: drains,
                { finished in
                    daemon.submit(uid: principal, connection: connection, work) {
                        done()
                        finished()
                        daemon.workEnded()
                    }
                },
                drop: { [self] in
                    // Never started: told so at a stop. A closed connection's (dropped as it is
                    // removed) is only counted out: nothing of it may run inside its close.
                    if closed {
                        running = false
                        runningBytes = 0
                    } else {
                        box.value = .failure(.shuttingDown)
                        done()
                    }
                    daemon.workEnded()
                })
            return
        }
        if write, context.enforceOwnership, !context.caller.isAdmin {
            let (turns, uid) = (server.leasedTurns, identity.uid)
            turns.writeStarted(uid)
            daemon.submit(uid: identity.principal, connection: number, work) {
                done()
                turns.writeEnded(uid)
            }
            return
        }
        daemon.submit(uid: identity.principal, connection: number, work, done: done)
    }

    /// Runs a request taken from the queue, counted until it is answered by what it holds
    /// (`held`, weighed here if not given) or by its line (`counted`), whichever is more; one
    /// that holds more than the connection may buffer is refused, the connection kept.
    func runTaken(_ parsed: Result<RPCRequest, RPCFailure>, counted: Int, held: Int? = nil) {
        // runningBytes is 0 here: a request is taken only while none runs.
        let request: RPCRequest
        switch parsed {
        case .success(let r): request = r
        case .failure(let f):
            // A notification gets no answer, not even an error.
            if !f.notification { write(RPCLine.error(id: f.id, f.error)) }
            return
        }
        let weight = max(
            counted,
            held ?? (counted - Session.requestOverhead > Session.weighedLineLimit ? request.heldBytes : 0))
        guard weight <= limits.connectionInputBytes else {
            if let id = request.id {
                write(RPCLine.error(id: id, .requestTooHeavy(holding: weight, limit: limits.connectionInputBytes)))
            }
            return
        }
        runningBytes = weight
        run(request)
        if !running { runningBytes = 0 }  // answered on the loop: it holds nothing now
    }

    /// Parses a long line on the pool, weighs what it parsed into there too, then runs it as
    /// if it had been parsed on arrival.
    func parseOffLoop(_ line: [UInt8], counted: Int) {
        running = true
        let box = Box<(parsed: Result<RPCRequest, RPCFailure>, held: Int)>()
        daemon.submit(
            uid: identity.principal, connection: number,
            {
                let parsed = Session.parseLong(line)
                box.value = (parsed, (try? parsed.get())?.heldBytes ?? 0)
            }
        ) { [self] in
            running = false
            runningBytes = 0
            server.parseGate.changed(by: -parseReserve, of: user)
            parseReserve = 0
            guard !closed else { return }  // like the rest of a closed connection's queue: not run
            if let (parsed, held) = box.value { runTaken(parsed, counted: counted, held: held) }
            pump()
        }
    }

    /// Parses a long line, its params' dictionary built too (unless a point read, which reads
    /// the members): with a hundred thousand members, building it on the loop would hold
    /// every other client.
    static func parseLong(_ line: [UInt8]) -> Result<RPCRequest, RPCFailure> {
        var result = line.withUnsafeBufferPointer { RPCRequest.parse($0) }
        if case .success(var request) = result, MethodTable.methods[request.method]?.execution != .pointRead {
            request.buildParams()
            result = .success(request)
            #if DEBUG
            if request.method == "ping" { LongParseHold.wait() }
            #endif
        }
        return result
    }

    /// A point read on the loop, over the snapshot the server keeps for this turn (the store's
    /// own reader if it has none), the result's JSON text written straight into the reply
    /// line. A touch is recorded in memory here too (Store+Access.swift): it costs what a read
    /// costs. An object with more file edges than the loop reads (Store+FileList.swift) is
    /// read on the pool instead, like any pool method, its params read there.
    private func pointRead(_ method: MethodTable.Method, _ request: RPCRequest, _ started: Double) {
        let reader: any PointReads = server.pointReader ?? daemon.store
        var answer = MethodTable.PointReadAnswer.written
        writeRendered { line in
            RPCLine.beginResult(id: request.id ?? .null, &line)
            answer = method.pointRead(
                Params(request), from: reader, into: &line,
                context: {
                    server.context(for: self)
                })
            guard case .written = answer, request.id != nil else { return false }
            RPCLine.endResult(&line)
            return true
        }
        switch answer {
        case .written:
            server.recordLatency(QueryClock.now() - started)
        case .failed(let failure):
            reply(request, .failure(failure), started)
        case .offLoop:
            // Nothing was recorded; a closed connection's read is not run (no one to answer).
            guard !closed else { return }
            runOffLoop(request, .null, .pool, server.context(for: self), started, members: Params(request))
        }
    }

    /// Answers `request`; `built` is the reply line when the worker thread made it.
    private func reply(
        _ request: RPCRequest, _ result: Result<MethodOutcome, RPCError>, _ started: Double, built: [UInt8]? = nil
    ) {
        server.recordLatency(QueryClock.now() - started)
        var result = result
        if case .success(let outcome) = result, case .watch = outcome.action, let refusal = server.watchRefusal(self) {
            result = .failure(refusal)
        }
        switch result {
        case .success(let outcome):
            if let built {
                write(built)
            } else if let id = request.id, !closed {
                var value = outcome.result
                if case .addDaemonStats = outcome.action { value = server.augmentStats(value) }
                // Into the kept output buffer: a line of its own was allocated and freed a reply.
                writeRendered { line in
                    if outcome.renderedMembers.isEmpty {
                        RPCLine.result(id: id, value, into: &line)
                    } else {
                        RPCLine.beginResult(id: id, &line)
                        StatsReply.write(value.objectValue ?? [:], rendered: outcome.renderedMembers, to: &line)
                        RPCLine.endResult(&line)
                    }
                    return true
                }
            }
            switch outcome.action {
            case .watch(let filter): watching = filter
            case .unwatch:
                watching = nil
                dropPending()
            case .shutdown, .addDaemonStats, .none: break
            }
            server.after(outcome)
        case .failure(let error):
            if let id = request.id { write(RPCLine.error(id: id, error)) }
        }
    }
}
