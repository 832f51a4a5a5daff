// Runs a closure on libuv's thread pool and a completion on the loop thread (`uv_work_t`).
// The request object is touched by a pool thread only to call `work`; libuv's queue orders
// that call before `done`, which runs, and is released, on the loop thread.

import CUV

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Submission of blocking work to libuv's thread pool.
public enum Work {
    /// The pool's threads, as libuv counts them at its first submission: `UV_THREADPOOL_SIZE`
    /// (0 counts as 1, at most 1024), else 4. Read once, at first use: set the variable before.
    public static let threads: Int = threads(
        UV_THREADPOOL_SIZE: getenv("UV_THREADPOOL_SIZE").map { String(cString: $0) })

    /// libuv's own reading (threadpool.c): `atoi` into an unsigned count, so a negative value
    /// is a huge one, cut to 1,024 threads, which the per-user halves must count too.
    static func threads(UV_THREADPOOL_SIZE text: String?) -> Int {
        guard let text else { return 4 }
        let n = UInt32(bitPattern: atoi(text))
        return n == 0 ? 1 : Int(min(n, 1024))
    }

    /// Runs `work` on libuv's thread pool, then `done` on the loop thread. The loop stays
    /// alive (``Loop/run()`` does not return) until `done` has run.
    /// The corresponding libuv call is `uv_queue_work`.
    ///
    /// The pool is process-wide and has 4 threads unless `UV_THREADPOOL_SIZE` is set
    /// before the first submission.
    ///
    /// - Throws: ``UVError`` if libuv refuses the request; then neither closure runs.
    public static func submit(
        loop: Loop, _ work: @escaping @Sendable () -> Void, done: @escaping () -> Void
    ) throws(UVError) {
        loop.preconditionOnLoopThread()
        let request = WorkRequest(loop: loop, work: work, done: done)
        request.retainWhileInFlight(request.raw)
        let result = uv_queue_work(
            loop.raw, request.raw,
            { raw in WorkRequest.borrowInFlight(raw).onWork() },
            { raw, _ in WorkRequest.takeFromFlight(raw).onDone() })
        if result < 0 {
            _ = WorkRequest.takeFromFlight(request.raw)
            throw UVError(code: result, call: "uv_queue_work")
        }
    }
}

/// One `uv_work_t` in flight, with its two closures.
private final class WorkRequest: RequestOwner {
    /// The request's memory, freed in deinit (on the loop thread, after `done`).
    let raw = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
    /// Keeps the loop alive while the request is in flight.
    let loop: Loop
    /// Runs on a pool thread.
    let work: @Sendable () -> Void
    /// Runs on the loop thread; never touched by the pool thread.
    let done: () -> Void

    init(loop: Loop, work: @escaping @Sendable () -> Void, done: @escaping () -> Void) {
        self.loop = loop
        self.work = work
        self.done = done
    }

    deinit { raw.deallocate() }

    /// On a pool thread.
    func onWork() { work() }

    /// On the loop thread. The status is only ever UV_ECANCELED after uv_cancel, which we never call.
    func onDone() { done() }
}
