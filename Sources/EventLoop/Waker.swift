// The one way into the loop from another thread (`uv_async_t`). Wakes coalesce, so the
// closure must drain a queue rather than count wakes. A lock orders wake() against close():
// once close() has begun, no thread can reach the handle's memory again.

import CUV
import Synchronization

/// Wakes the loop from any thread and runs a closure on the loop thread.
///
/// Several ``wake()`` calls may produce one call of the closure, so keep the work itself
/// in a locked queue and drain it in the closure:
///
/// ```swift
/// let waker = try Waker(loop: loop) { for job in queue.takeAll() { job() } }
/// // on any thread:
/// queue.append(job); waker.wake()
/// ```
public final class Waker: HandleOwner, @unchecked Sendable {
    // @unchecked Sendable: only wake() runs off the loop thread; it reads the immutable
    // `asyncHandle` pointer under `accepting`'s lock, and uv_async_send is thread-safe (async.rst).
    private let handle: Handle<uv_async_t>
    private let asyncHandle: UnsafeMutablePointer<uv_async_t>
    /// True until close() starts; wake() sends only while it holds this lock and it is true.
    private let accepting = Mutex(true)
    private var onWake: (() -> Void)?

    /// Creates the waker. The corresponding libuv call is `uv_async_init`.
    public init(loop: Loop, _ onWake: @escaping () -> Void) throws(UVError) {
        handle = try Handle(loop: loop, call: "uv_async_init") { loop, raw in
            uv_async_init(loop, raw) { async in Waker.owner(of: async).onWake?() }
        }
        asyncHandle = handle.raw
        self.onWake = onWake
        handle.adopt(self)
    }

    /// Asks the loop to run the closure soon. Safe from any thread; coalesces; does nothing
    /// once ``close(_:)`` has started. The corresponding libuv call is `uv_async_send`.
    public func wake() {
        accepting.withLock { accepting in
            // The result is ignored: uv_async_send fails only for a handle that is not an async handle.
            if accepting { _ = uv_async_send(asyncHandle) }
        }
    }

    /// Closes the waker (loop thread only); later ``wake()`` calls are ignored.
    /// Idempotent. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.loop.preconditionOnLoopThread()
        accepting.withLock { $0 = false }
        handle.close(onClosed)
    }

    /// Lets the loop's ``Loop/run()`` return while this waker is open (loop thread only).
    /// The corresponding libuv call is `uv_unref`.
    public func unref() {
        handle.unref()
    }

    /// From the close callback: frees the handle, drops the closure, runs `onClosed`.
    func didClose() {
        handle.finishClose { onWake = nil }
    }
}
