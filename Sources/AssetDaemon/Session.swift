// One client connection: splits lines, runs its requests one at a time in order (so a
// pipelined request sees the effects of the ones before it), writes replies in order, and
// sends events when watching. Loop-bound. A client that does not read is paused, and a
// watcher that falls far behind is dropped; other clients never wait for either.

import AssetStore
import ControlProtocol
import EventLoop
import Foundation

/// Written on a pool thread, read on the loop thread after libuv's `done`, which orders the two.
final class Box<T>: @unchecked Sendable {
    var value: T?
}

final class Session {
    /// Stop reading a client's requests while this many reply bytes wait to be written.
    static let replyBacklogLimit = 4 << 20
    /// Drop a watcher whose unwritten events exceed this.
    static let eventBacklogLimit = 16 << 20
    /// Stop reading while this many requests wait to run.
    static let queuedRequestLimit = 4096

    private unowned let server: ControlServer
    let stream: PipeStream
    let identity: PeerIdentity
    private var framer: LineFramer
    private var queue: [Result<RPCRequest, RPCFailure>] = []
    private var running = false
    private var readingPaused = false
    /// The peer closed its end: finish what runs, then close.
    private var peerEnded = false
    private(set) var closed = false
    var watching: EventFilter?

    init(server: ControlServer, stream: PipeStream, identity: PeerIdentity, maximumLine: Int) {
        self.server = server
        self.stream = stream
        self.identity = identity
        framer = LineFramer(maximumLength: maximumLine)
    }

    func start() throws(UVError) {
        try stream.startReading({ [unowned self] bytes in onData(bytes) }, onEnd: { [unowned self] _ in onEnd() })
    }

    private func onData(_ bytes: UnsafeRawBufferPointer) {
        for item in framer.feed(bytes) {
            switch item {
            case .line(let line):
                queue.append(line.withUnsafeBufferPointer { RPCRequest.parse($0) })
            case .tooLong:
                write(RPCLine.error(id: .null, .requestTooLarge(limit: framer.maximumLength)))
                stream.stopReading()
                pump()
                close(flush: true)
                return
            }
        }
        pump()
    }

    private func onEnd() {
        peerEnded = true
        pump()
    }

    /// Runs queued requests until one has to wait for the thread pool, or until replies pile
    /// up unread (then the write completions resume it).
    func pump() {
        while !running, !closed, !queue.isEmpty, stream.writeQueueSize <= Session.replyBacklogLimit {
            switch queue.removeFirst() {
            case .failure(let f):
                if !f.notification { write(RPCLine.error(id: f.id, f.error)) }
            case .success(let request):
                run(request)
            }
        }
        if peerEnded && !running && queue.isEmpty {
            close(flush: false)
            return
        }
        updateReading()
    }

    private func run(_ request: RPCRequest) {
        let started = QueryClock.now()
        if server.stopping {
            reply(request, .failure(.application(.busy, "assetd is shutting down", detail: nil).shuttingDown), started)
            return
        }
        guard let method = MethodTable.methods[request.method] else {
            reply(request, .failure(.methodNotFound(request.method)), started)
            return
        }
        if request.method == "ping" {
            // Answered on the loop from memory: it must stay fast while scans fill the pool.
            let result: JSONValue = .object(["version": .string(MethodTable.version), "commit": .int(server.lastCommit)])
            reply(request, .success(MethodOutcome(result)), started)
            return
        }
        if request.method == "object.get", request.params["touch"] == nil || request.params["touch"] == false {
            // A point read: answered on the loop from a prepared statement (no pool hop), with
            // the stored value spliced into the reply.
            pointRead(request, started)
            return
        }
        let context = server.context(for: identity)
        guard method.slow else {
            reply(request, MethodTable.call(request.method, request.params, context), started)
            return
        }
        running = true
        if request.method == "object.put" {
            server.puts.enqueue(request.params, context) { [self] result in
                running = false
                reply(request, result, started)
                pump()
            }
            return
        }
        let box = Box<Result<MethodOutcome, RPCError>>()
        let (name, params) = (request.method, request.params)
        do {
            try server.submit({ box.value = MethodTable.call(name, params, context) }) { [self] in
                running = false
                reply(request, box.value ?? .failure(RPCError(code: RPCError.internalErrorCode, message: "lost result")), started)
                pump()
            }
        } catch {
            running = false
            reply(request, .failure(RPCError(code: RPCError.internalErrorCode, message: "\(error)")), started)
        }
    }

    private func pointRead(_ request: RPCRequest, _ started: Double) {
        let p = Params(request.params)
        let bytes: [UInt8]
        do {
            let ref = try p.ref()
            bytes = try server.store.objectJSON(ref) ?? Array("null".utf8)
        } catch let e as RPCError {
            reply(request, .failure(e), started)
            return
        } catch let e as StoreError {
            reply(request, .failure(RPCError(e)), started)
            return
        } catch {
            reply(request, .failure(RPCError(code: RPCError.internalErrorCode, message: "internal error")), started)
            return
        }
        server.recordLatency(QueryClock.now() - started)
        if let id = request.id { write(RPCLine.result(id: id, rawResult: bytes)) }
    }

    private func reply(_ request: RPCRequest, _ result: Result<MethodOutcome, RPCError>, _ started: Double) {
        server.recordLatency(QueryClock.now() - started)
        switch result {
        case .success(let outcome):
            var value = outcome.result
            if request.method == "stats" { value = server.augmentStats(value) }
            if let id = request.id { write(RPCLine.result(id: id, value)) }
            switch outcome.action {
            case .watch(let filter): watching = filter
            case .unwatch: watching = nil
            case .shutdown, .none: break
            }
            server.after(outcome)
        case .failure(let error):
            if let id = request.id { write(RPCLine.error(id: id, error)) }
        }
    }

    private func write(_ bytes: [UInt8]) {
        guard !closed else { return }
        stream.write(bytes) { [weak self] _ in self?.writeCompleted() }
    }

    private func writeCompleted() {
        guard !closed else { return }
        if !running && !queue.isEmpty { pump() } else { updateReading() }
    }

    /// Sends an event line unless the watcher has fallen too far behind (then it is dropped).
    func send(event: ServerEvent) {
        guard !closed, let filter = watching, event.matches(filter) else { return }
        if stream.writeQueueSize > Session.eventBacklogLimit {
            server.logger.warning("dropping a watcher (uid \(identity.uid)) that does not read its events")
            close(flush: false)
            return
        }
        write(event.line)
    }

    /// Pauses reading while replies pile up or requests queue; resumes when they drain.
    private func updateReading() {
        guard !closed, !peerEnded, !framer.overflowed else { return }
        let busy = stream.writeQueueSize > Session.replyBacklogLimit || queue.count > Session.queuedRequestLimit
        if busy && !readingPaused {
            stream.stopReading()
            readingPaused = true
        } else if !busy && readingPaused {
            readingPaused = false
            do { try start() } catch { close(flush: false) }
        }
    }

    /// Answers every queued request with shutting_down (the daemon is stopping).
    func refuseQueued() {
        for item in queue {
            if case .success(let r) = item, let id = r.id {
                write(RPCLine.error(id: id, RPCError.application(.busy, "assetd is shutting down").shuttingDown))
            }
        }
        queue = []
    }

    var isIdle: Bool { !running }

    func close(flush: Bool) {
        guard !closed else { return }
        closed = true
        watching = nil
        if flush { stream.shutdownAndClose() } else { stream.close() }
        server.remove(self)
    }
}

extension RPCError {
    /// The same error with data.code `shutting_down`.
    var shuttingDown: RPCError {
        RPCError(code: RPCError.applicationCode, message: message, data: .object(["code": "shutting_down"]))
    }
}

/// Monotonic seconds.
enum QueryClock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
