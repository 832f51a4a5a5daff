// Ownership of libuv handles and requests, written once. Every uv_*_t lives on the heap;
// a handle's `data` holds its owner retained (+1) from init until the close callback, which
// is the one place that releases the owner and frees the memory. A request's `data` holds
// its owner +1 while in flight. No other file in this module touches Unmanaged.

import CUV

// > If uv_foo_init() succeeds, you must call uv_close on the handle. A handle's memory
// > may be reclaimed only in or after its close callback. Handles are not movable.
// > (libuv docs/src/design.rst, handle.rst)

/// A class that owns exactly one libuv handle through a ``Handle``.
protocol HandleOwner: AnyObject {
    /// Closes the handle; every public handle type has this.
    func close(_ onClosed: (() -> Void)?)
    /// Runs once, from the close callback: calls ``Handle/finishClose(dropping:)``, which
    /// frees the handle, drops every stored closure (they may form cycles with the owner's
    /// users) and runs `onClosed`.
    func didClose()
}

/// Where a handle is in its life.
enum HandleState {
    /// Initialized and usable.
    case open
    /// `uv_close` was called; the close callback has not run yet, so the memory is still valid.
    case closing
    /// The close callback ran and the memory is freed.
    case closed
}

/// One heap-allocated libuv handle of type `Raw`, and the bookkeeping of its close.
///
/// It is loop-bound like its owner, and keeps the ``Loop`` alive until it is closed.
final class Handle<Raw> {
    /// The handle's memory: valid from init until ``finishClose(dropping:)``.
    let raw: UnsafeMutablePointer<Raw>
    /// The loop it was initialized on.
    let loop: Loop
    /// Open, closing or closed.
    private(set) var state = HandleState.open
    private var closeCallbacks: [() -> Void] = []

    /// Allocates the handle and runs `initialize` (a `uv_*_init` call) on it.
    ///
    /// - Throws: the init call's error; the memory is then freed without closing, because
    ///   libuv never saw the handle.
    init(
        loop: Loop, call: String,
        _ initialize: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<Raw>) -> Int32
    ) throws(UVError) {
        loop.preconditionOnLoopThread()
        let raw = UnsafeMutablePointer<Raw>.allocate(capacity: 1)
        let result = initialize(loop.raw, raw)
        guard result == 0 else {
            raw.deallocate()
            throw UVError(code: result, call: call)
        }
        self.raw = raw
        self.loop = loop
        loop.handleDidOpen()
    }

    /// The same handle seen as a `uv_handle_t`; any libuv handle can be cast to it (handle.rst).
    var asHandle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutablePointer(OpaquePointer(raw)) }

    /// Hands `owner` to libuv: `data` keeps it alive until the close callback releases it.
    func adopt(_ owner: some HandleOwner) {
        // Unmanaged: a +1 owned by libuv, balanced only in `handleDidClose` below.
        uv_handle_set_data(asHandle, Unmanaged<AnyObject>.passRetained(owner).toOpaque())
    }

    /// Starts closing. Idempotent: a later call's `onClosed` runs with the first close,
    /// or at once if the close has already completed.
    func close(_ onClosed: (() -> Void)?) {
        loop.preconditionOnLoopThread()
        switch state {
        case .open:
            state = .closing
            if let onClosed { closeCallbacks.append(onClosed) }
            uv_close(asHandle) { handle in handleDidClose(handle) }
        case .closing:
            if let onClosed { closeCallbacks.append(onClosed) }
        case .closed:
            onClosed?()
        }
    }

    /// The whole of an owner's `didClose()`: frees the memory, runs `dropClosures` (the owner
    /// sets its stored closures to nil), then the `onClosed` callbacks.
    func finishClose(dropping dropClosures: () -> Void) {
        precondition(state == .closing, "a handle finished closing twice")
        state = .closed
        raw.deallocate()
        loop.handleDidClose()
        let callbacks = closeCallbacks
        closeCallbacks = []
        dropClosures()
        for callback in callbacks { callback() }
    }

    /// Lets the loop exit while this handle is active (a no-op once closed).
    func unref() {
        loop.preconditionOnLoopThread()
        if state != .closed { uv_unref(asHandle) }
    }
}

extension Handle where Raw == uv_pipe_t {
    /// The pipe seen as a `uv_stream_t`; a `uv_pipe_t` starts with the stream fields (stream.rst).
    var asStream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutablePointer(OpaquePointer(raw)) }
}

extension HandleOwner {
    /// The owner stored in a handle's `data`, for C callbacks. Borrowed: libuv holds the +1,
    /// and no callback but the close callback can run after it is released.
    static func owner<Raw>(of raw: UnsafeMutablePointer<Raw>?) -> Self {
        let data = uv_handle_get_data(UnsafePointer(OpaquePointer(raw)))
        // Unmanaged: a borrow of the +1 set by `Handle.adopt`, which outlives every callback.
        // data!: set by adopt before any callback can run.
        let object = Unmanaged<AnyObject>.fromOpaque(data!).takeUnretainedValue()
        return unsafeDowncast(object, to: Self.self)
    }
}

/// The one close callback: takes back the +1 from `Handle.adopt` and lets the owner finish.
private func handleDidClose(_ handle: UnsafeMutablePointer<uv_handle_t>?) {
    // Unmanaged: balances the passRetained in `Handle.adopt`; the owner may deinit when this returns.
    // data!: adopt runs before any close.
    let object = Unmanaged<AnyObject>.fromOpaque(uv_handle_get_data(handle)!).takeRetainedValue()
    (object as! any HandleOwner).didClose()  // as!: adopt only ever stores a HandleOwner
}

/// Closes one handle found by `uv_walk`, if it is ours and not already closing.
func closeWalkedHandle(_ handle: UnsafeMutablePointer<uv_handle_t>?) {
    guard let handle, uv_is_closing(handle) == 0, let data = uv_handle_get_data(handle) else { return }
    // Unmanaged: a borrow of the +1 held by libuv; close() only schedules the release.
    let object = Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue()
    (object as? any HandleOwner)?.close(nil)
}

// MARK: - Requests

// > When a function which takes a callback returns an error, the callback will never be
// > called. (libuv docs/src/errors.rst)

/// A small class that owns one in-flight libuv request (libuv's "baton", guide/utilities.rst).
///
/// Its memory is freed in `deinit`; requests are never closed.
protocol RequestOwner: AnyObject {}

extension RequestOwner {
    /// Stores `self` +1 in the request's `data` just before submitting it.
    func retainWhileInFlight<Request>(_ request: UnsafeMutablePointer<Request>) {
        // Unmanaged: a +1 held by libuv until the completion callback (or a failed submit) takes it back.
        uv_req_set_data(UnsafeMutablePointer(OpaquePointer(request)), Unmanaged.passRetained(self).toOpaque())
    }

    /// Takes back the +1: in the completion callback, or at once when the submit call failed.
    static func takeFromFlight<Request>(_ request: UnsafeMutablePointer<Request>?) -> Self {
        let data = uv_req_get_data(UnsafePointer(OpaquePointer(request)))
        // Unmanaged: balances `retainWhileInFlight`; libuv never calls back for this request again.
        return Unmanaged<Self>.fromOpaque(data!).takeRetainedValue()  // data!: set before the submit
    }

    /// Borrows the owner while libuv still holds it (for the work callback on a pool thread).
    static func borrowInFlight<Request>(_ request: UnsafeMutablePointer<Request>?) -> Self {
        let data = uv_req_get_data(UnsafePointer(OpaquePointer(request)))
        // Unmanaged: a borrow of the +1 that the completion callback will take later.
        return Unmanaged<Self>.fromOpaque(data!).takeUnretainedValue()  // data!: set before the submit
    }
}
