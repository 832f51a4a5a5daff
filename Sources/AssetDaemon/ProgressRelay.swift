// Progress of long methods (`progress: true`), carried from pool threads to the loop: a
// locked queue of ready lines and a Waker. Each request's reporter sends at most 5 updates a
// second; the session drains the queue before it writes a reply, so progress always precedes it.

import AssetStore
import ControlProtocol
import EventLoop
import Synchronization

/// Progress lines waiting for the loop, by connection number.
final class ProgressRelay: Sendable {
    /// The least time between two updates of one request.
    static let minimumInterval = 0.2

    private let queue = Mutex<[(session: UInt64, line: [UInt8])]>([])
    /// Set once on the loop thread before any reporter exists; wake() is thread-safe.
    private let waker = Mutex<Waker?>(nil)

    /// Starts waking `loop`, which runs `deliver` (it should call `takeAll()`).
    func start(loop: Loop, deliver: @escaping () -> Void) throws(UVError) {
        let w = try Waker(loop: loop, deliver)
        w.unref()  // progress alone must not keep a stopping daemon alive
        waker.withLock { $0 = w }
    }

    /// Closes the waker (loop thread); later reports are dropped.
    func close() {
        let w = waker.withLock { w -> Waker? in
            defer { w = nil }
            return w
        }
        w?.close()
    }

    /// A reporter for request `id` of connection `session`, safe to call from any thread.
    func reporter(session: UInt64, request id: RPCID) -> @Sendable ([String: JSONValue]) -> Void {
        let last = Mutex<Double?>(nil)
        return { [self] fields in
            let now = QueryClock.now()
            let due = last.withLock { t -> Bool in
                if let t, now - t < ProgressRelay.minimumInterval { return false }
                t = now
                return true
            }
            guard due else { return }
            let line = RPCLine.progress(id: id, fields)
            queue.withLock { $0.append((session, line)) }
            waker.withLock { $0?.wake() }
        }
    }

    /// Everything queued, oldest first.
    func takeAll() -> [(session: UInt64, line: [UInt8])] {
        queue.withLock { q in
            defer { q = [] }
            return q
        }
    }
}
