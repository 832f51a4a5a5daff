// A closure run once per loop iteration, just before the loop waits for I/O (`uv_prepare_t`):
// the end of a turn, when work batched over the turn's callbacks is finished off. An active
// hook does not keep the loop alive by itself (it is unref'd, like a watchdog).

import CUV

/// Runs a closure on the loop thread at the end of every loop iteration, before polling.
///
/// ```swift
/// let hook = try TurnHook(loop: loop) { reader.endSnapshot() }
/// // later
/// hook.close()
/// ```
public final class TurnHook: HandleOwner {
    private let handle: Handle<uv_prepare_t>
    private var onTurnEnd: (() -> Void)?

    /// Creates a started hook. The corresponding libuv calls are `uv_prepare_init` and
    /// `uv_prepare_start`; the handle is unref'd so it alone never keeps ``Loop/run()`` going.
    ///
    /// - Parameter onTurnEnd: runs on the loop thread once per iteration, before polling.
    /// - Throws: ``UVError`` from either call (a started-then-failed handle is closed).
    public init(loop: Loop, _ onTurnEnd: @escaping () -> Void) throws(UVError) {
        handle = try Handle(loop: loop, call: "uv_prepare_init") { uv_prepare_init($0, $1) }
        handle.adopt(self)
        self.onTurnEnd = onTurnEnd
        let result = uv_prepare_start(handle.raw) { prepare in TurnHook.owner(of: prepare).onTurnEnd?() }
        guard result == 0 else {
            handle.close(nil)
            throw UVError(code: result, call: "uv_prepare_start")
        }
        handle.unref()
    }

    /// Closes the hook; `onClosed` runs on the loop thread once libuv has released it.
    /// Idempotent. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.close(onClosed)
    }

    /// From the close callback: frees the handle, drops the closure, runs `onClosed`.
    func didClose() {
        handle.finishClose { onTurnEnd = nil }
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension TurnHook: Sendable {}
