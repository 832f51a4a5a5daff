// A closure run once per loop iteration at a fixed point of it: just before the loop waits for
// I/O (`uv_prepare_t`), or just after the callbacks of what the wait found (`uv_check_t`).
// Work batched over a turn's callbacks is finished off there. An active hook does not keep
// the loop alive by itself (it is unref'd, like a watchdog).

import CUV

/// Runs a closure on the loop thread once per loop iteration, before polling or after it.
///
/// ```swift
/// let hook = try TurnHook(loop: loop) { reader.endSnapshot() }
/// // later
/// hook.close()
/// ```
public final class TurnHook: HandleOwner {
    /// Where in the loop's iteration the closure runs.
    public enum Moment: Sendable {
        /// After timers, pending callbacks and idle handles, just before polling (`uv_prepare_t`).
        case beforePolling
        /// Just after the callbacks of the poll phase (`uv_check_t`).
        case afterPolling
    }

    private enum Raw {
        case prepare(Handle<uv_prepare_t>)
        case check(Handle<uv_check_t>)
    }

    private let handle: Raw
    private var onTurnEnd: (() -> Void)?

    /// Creates a started hook. The corresponding libuv calls are `uv_prepare_init` and
    /// `uv_prepare_start` (`uv_check_init` and `uv_check_start` after polling); the handle is
    /// unref'd so it alone never keeps ``Loop/run()`` going.
    ///
    /// - Parameter onTurnEnd: runs on the loop thread once per iteration, at `moment`.
    /// - Throws: ``UVError`` from either call (a started-then-failed handle is closed).
    public init(loop: Loop, at moment: Moment = .beforePolling, _ onTurnEnd: @escaping () -> Void) throws(UVError) {
        self.onTurnEnd = onTurnEnd
        let result: Int32
        switch moment {
        case .beforePolling:
            let raw = try Handle<uv_prepare_t>(loop: loop, call: "uv_prepare_init") { uv_prepare_init($0, $1) }
            handle = .prepare(raw)
            raw.adopt(self)
            result = uv_prepare_start(raw.raw) { prepare in TurnHook.owner(of: prepare).onTurnEnd?() }
        case .afterPolling:
            let raw = try Handle<uv_check_t>(loop: loop, call: "uv_check_init") { uv_check_init($0, $1) }
            handle = .check(raw)
            raw.adopt(self)
            result = uv_check_start(raw.raw) { check in TurnHook.owner(of: check).onTurnEnd?() }
        }
        guard result == 0 else {
            close(nil)
            throw UVError(code: result, call: moment == .beforePolling ? "uv_prepare_start" : "uv_check_start")
        }
        switch handle {
        case .prepare(let raw): raw.unref()
        case .check(let raw): raw.unref()
        }
    }

    /// Closes the hook; `onClosed` runs on the loop thread once libuv has released it.
    /// Idempotent. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        switch handle {
        case .prepare(let raw): raw.close(onClosed)
        case .check(let raw): raw.close(onClosed)
        }
    }

    /// From the close callback: frees the handle, drops the closure, runs `onClosed`.
    func didClose() {
        switch handle {
        case .prepare(let raw): raw.finishClose { onTurnEnd = nil }
        case .check(let raw): raw.finishClose { onTurnEnd = nil }
        }
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension TurnHook: Sendable {}
