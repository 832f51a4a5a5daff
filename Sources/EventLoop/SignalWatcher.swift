// Delivers a Unix signal to a closure on the loop thread (`uv_signal_t`). libuv installs the
// real handler and forwards through a pipe, so the closure may do anything; when the last
// watcher for a signal closes, libuv restores the default disposition.

import CUV

/// Runs a closure on the loop thread each time the process receives a signal.
///
/// ```swift
/// let term = try SignalWatcher(loop: loop, signal: SIGTERM) { daemon.beginStop() }
/// ```
public final class SignalWatcher: HandleOwner {
    private let handle: Handle<uv_signal_t>
    private var onSignal: (() -> Void)?

    /// Starts watching `signal`. The corresponding libuv calls are `uv_signal_init` and `uv_signal_start`.
    ///
    /// - Throws: ``UVError`` if libuv cannot watch the signal (for example `SIGKILL`: `UV_EINVAL`).
    public init(loop: Loop, signal: Int32, _ onSignal: @escaping () -> Void) throws(UVError) {
        handle = try Handle(loop: loop, call: "uv_signal_init") { uv_signal_init($0, $1) }
        self.onSignal = onSignal
        handle.adopt(self)
        let result = uv_signal_start(handle.raw, { watcher, _ in SignalWatcher.owner(of: watcher).onSignal?() }, signal)
        guard result == 0 else {
            handle.close(nil)  // init succeeded, so libuv must see the close
            throw UVError(code: result, call: "uv_signal_start")
        }
    }

    /// Stops watching; `onClosed` runs on the loop thread once libuv has released it.
    /// Idempotent. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.close(onClosed)
    }

    /// Lets the loop's ``Loop/run()`` return even while this watcher is active.
    /// The corresponding libuv call is `uv_unref`.
    public func unref() {
        handle.unref()
    }

    /// From the close callback: frees the handle, drops the closure, runs `onClosed`.
    func didClose() {
        handle.finishClose { onSignal = nil }
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension SignalWatcher: Sendable {}
