// Group commit for object.put. Arriving puts queue; a batch job on the thread pool takes
// everything queued once it holds the write lock (so puts that arrive while another writer
// holds it join), and commits it as one transaction. Each put is acknowledged only after its
// commit is durable. Loop-bound, except the queue the jobs take.

import AssetStore
import ControlProtocol
import EventLoop
import Synchronization

final class PutBatcher {
    /// One queued put; the ticket finds its reply closure when the job is done.
    private struct Input: Sendable {
        var ticket: UInt64
        var params: JSONValue
        var context: MethodContext
    }

    /// Jobs in flight at most: one committing, one syncing.
    static let maximumJobs = 2

    private unowned let server: ControlServer
    /// Shared with the pool threads, which take from it under the write lock.
    private let queue = Queue()
    private var waiting: [UInt64: (Result<MethodOutcome, RPCError>) -> Void] = [:]
    private var nextTicket: UInt64 = 0
    private var jobs = 0

    private final class Queue: Sendable {
        let inputs = Mutex<[Input]>([])
    }

    init(server: ControlServer) {
        self.server = server
    }

    func enqueue(_ params: JSONValue, _ context: MethodContext, done: @escaping (Result<MethodOutcome, RPCError>) -> Void) {
        nextTicket += 1
        waiting[nextTicket] = done
        queue.inputs.withLock { $0.append(Input(ticket: nextTicket, params: params, context: context)) }
        startIfRoom()
    }

    private func startIfRoom() {
        guard jobs < PutBatcher.maximumJobs, queue.inputs.withLock({ !$0.isEmpty }) else { return }
        jobs += 1
        let store = server.store
        let queue = self.queue
        let box = Box<[(UInt64, Result<MethodOutcome, RPCError>)]>()
        do {
            try server.submit({
                box.value = MethodTable.putBatch(store) {
                    queue.inputs.withLock { q in
                        defer { q = [] }
                        return q.map { ($0.ticket, $0.params, $0.context) }
                    }
                }
            }) { [self] in
                jobs -= 1
                for (ticket, result) in box.value ?? [] {
                    waiting.removeValue(forKey: ticket)?(result)
                }
                startIfRoom()
            }
        } catch {
            jobs -= 1
            // Not submitted: nothing was taken, so everything queued is answered here.
            let failed = queue.inputs.withLock { q in
                defer { q = [] }
                return q
            }
            for input in failed {
                waiting.removeValue(forKey: input.ticket)?(.failure(RPCError(code: RPCError.internalErrorCode, message: "\(error)")))
            }
        }
    }
}
