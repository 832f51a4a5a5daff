// A one-shot or repeating timer on the loop (`uv_timer_t`). Its closure runs on the loop
// thread and is dropped when the timer closes. Starting again replaces the closure.

import CUV

/// A timer that calls a closure on the loop thread after a delay, optionally repeating.
///
/// ```swift
/// let timer = try Timer(loop: loop)
/// try timer.start(after: 1, repeating: 60) { sweep() }
/// // later
/// timer.close()
/// ```
public final class Timer: HandleOwner {
    private let handle: Handle<uv_timer_t>
    private var onFire: (() -> Void)?

    /// Creates a stopped timer. The corresponding libuv call is `uv_timer_init`.
    public init(loop: Loop) throws(UVError) {
        handle = try Handle(loop: loop, call: "uv_timer_init") { uv_timer_init($0, $1) }
        handle.adopt(self)
    }

    /// Starts (or restarts) the timer. Delays are rounded up to whole milliseconds; a
    /// repeat interval is at least 1 ms. The corresponding libuv call is `uv_timer_start`.
    ///
    /// - Parameters:
    ///   - seconds: the delay before the first call (0 means the next loop iteration).
    ///   - repeating: the interval between later calls, or nil to fire once.
    ///   - onFire: runs on the loop thread each time the timer fires.
    /// - Throws: ``UVError`` from `uv_timer_start`.
    public func start(after seconds: Double, repeating: Double? = nil, _ onFire: @escaping () -> Void) throws(UVError) {
        handle.loop.preconditionOnLoopThread()
        precondition(handle.state == .open, "Timer.start after close")
        let timeout = Timer.milliseconds(seconds)
        let interval = repeating.map { max(1, Timer.milliseconds($0)) } ?? 0
        self.onFire = onFire
        try UVError.check(
            uv_timer_start(handle.raw, { timer in Timer.owner(of: timer).onFire?() }, timeout, interval),
            "uv_timer_start")
    }

    /// Stops the timer; it can be started again. A no-op once closing.
    /// The corresponding libuv call is `uv_timer_stop`.
    public func stop() {
        handle.loop.preconditionOnLoopThread()
        if handle.state == .open { uv_timer_stop(handle.raw) }
    }

    /// Closes the timer; `onClosed` runs on the loop thread once libuv has released it.
    /// Idempotent: a second call's `onClosed` also runs. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.close(onClosed)
    }

    /// Lets the loop's ``Loop/run()`` return even while this timer is active.
    /// The corresponding libuv call is `uv_unref`.
    public func unref() {
        handle.unref()
    }

    /// From the close callback: frees the handle, drops the closure, runs `onClosed`.
    func didClose() {
        handle.finishClose { onFire = nil }
    }

    private static func milliseconds(_ seconds: Double) -> UInt64 {
        precondition(seconds.isFinite && seconds >= 0, "a timer delay must be a finite, non-negative number of seconds")
        return UInt64((seconds * 1000).rounded(.up))
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension Timer: Sendable {}
