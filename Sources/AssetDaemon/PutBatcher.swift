// Group commit for object.put: while one batch commits (and syncs), arriving puts queue; the
// next batch takes them all in one transaction. Each put is still acknowledged only after
// its commit is durable. Loop-bound.

import AssetStore
import ControlProtocol
import EventLoop

final class PutBatcher {
    private struct Job {
        var params: JSONValue
        var context: MethodContext
        var done: (Result<MethodOutcome, RPCError>) -> Void
    }

    private unowned let server: ControlServer
    private var queue: [Job] = []
    private var committing = false

    init(server: ControlServer) {
        self.server = server
    }

    func enqueue(_ params: JSONValue, _ context: MethodContext, done: @escaping (Result<MethodOutcome, RPCError>) -> Void) {
        queue.append(Job(params: params, context: context, done: done))
        startIfIdle()
    }

    private func startIfIdle() {
        guard !committing, !queue.isEmpty else { return }
        committing = true
        let jobs = queue
        queue = []
        let inputs = jobs.map { ($0.params, $0.context) }
        let store = server.store
        let box = Box<[Result<MethodOutcome, RPCError>]>()
        do {
            try server.submit({ box.value = MethodTable.putBatch(store, inputs) }) { [self] in
                committing = false
                let results = box.value ?? []
                for (i, job) in jobs.enumerated() {
                    job.done(i < results.count ? results[i] : .failure(RPCError(code: RPCError.internalErrorCode, message: "lost result")))
                }
                startIfIdle()
            }
        } catch {
            committing = false
            for job in jobs { job.done(.failure(RPCError(code: RPCError.internalErrorCode, message: "\(error)"))) }
        }
    }
}
