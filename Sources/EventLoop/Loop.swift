// The event loop: one heap `uv_loop_t`, run by one thread. Every handle keeps its Loop
// alive until closed, so a Loop deinitializes only when nothing of ours is left on it.
// While it runs, loop-bound calls from any other thread are a bug and trap.

import CUV
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A libuv event loop and its thread's way to run it.
///
/// Create it, create handles on it, call ``run()``; when `run()` returns, call ``close()``.
/// Everything loop-bound (handles, ``Work`` submission) must happen on the thread that
/// runs the loop; the one way in from another thread is ``Waker/wake()``.
///
/// ```swift
/// let loop = try Loop()
/// let timer = try Timer(loop: loop)
/// try timer.start(after: 0.5) { timer.close() }
/// loop.run()
/// try loop.close()
/// ```
public final class Loop {
    /// The loop's memory; never moved, freed by ``close()`` (or `deinit`).
    let raw: UnsafeMutablePointer<uv_loop_t>
    private var isClosed = false
    /// The id of the thread inside `uv_run`, or 0 when the loop is not running.
    private let runningThread = Atomic<UInt>(0)

    /// Handles created and not yet closed (their close callback has not run), counted by this
    /// module; for tests and shutdown checks.
    public private(set) var openHandleCount = 0

    /// Creates a loop. The corresponding libuv call is `uv_loop_init`.
    ///
    /// - Throws: ``UVError`` if libuv cannot create the loop's internal descriptors.
    public init() throws(UVError) {
        let raw = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        let result = uv_loop_init(raw)
        guard result == 0 else {
            raw.deallocate()
            throw UVError(code: result, call: "uv_loop_init")
        }
        self.raw = raw
    }

    deinit {
        guard !isClosed else { return }
        // Every handle and request of ours holds the Loop, so none is left here; if libuv
        // still refuses, leaking the memory is safer than freeing it under a handle.
        if uv_loop_close(raw) == 0 { raw.deallocate() }
    }

    /// Runs until no active, referenced handle or request remains, or until ``stop()``.
    /// The corresponding libuv call is `uv_run(UV_RUN_DEFAULT)`.
    public func run() {
        _ = run(mode: UV_RUN_DEFAULT)
    }

    /// Runs one iteration: polls for I/O, blocking if `wait` is true and there is something
    /// to wait for (`UV_RUN_ONCE`), or not at all (`UV_RUN_NOWAIT`).
    ///
    /// - Returns: true if more work is pending (active handles or requests remain).
    public func runOnce(wait: Bool) -> Bool {
        run(mode: wait ? UV_RUN_ONCE : UV_RUN_NOWAIT) != 0
    }

    private func run(mode: uv_run_mode) -> Int32 {
        precondition(!isClosed, "Loop.run after Loop.close")
        let (exchanged, _) = runningThread.compareExchange(
            expected: 0, desired: Loop.currentThread, ordering: .relaxed)
        precondition(exchanged, "Loop.run is not reentrant: called from a callback or from a second thread")
        defer { runningThread.store(0, ordering: .relaxed) }
        return uv_run(raw, mode)
    }

    /// Makes ``run()`` return at the end of the current iteration, with handles left open.
    /// The corresponding libuv call is `uv_stop`.
    public func stop() {
        preconditionOnLoopThread()
        uv_stop(raw)
    }

    /// The loop's cached time in milliseconds, updated at the start of each iteration.
    /// The corresponding libuv call is `uv_now`.
    public var now: UInt64 {
        preconditionOnLoopThread()
        return uv_now(raw)
    }

    /// Closes the loop and frees it. Idempotent once it has succeeded.
    /// The corresponding libuv call is `uv_loop_close`.
    ///
    /// - Throws: ``UVError`` with code `UV_EBUSY` while any handle is open or closing, or
    ///   any request is in flight; close them, ``run()`` until it returns, and try again.
    public func close() throws(UVError) {
        precondition(runningThread.load(ordering: .relaxed) == 0, "Loop.close from inside Loop.run")
        guard !isClosed else { return }
        try UVError.check(uv_loop_close(raw), "uv_loop_close")
        raw.deallocate()
        isClosed = true
    }

    /// Starts closing every handle created by this module that is not already closing
    /// (like libuv's test teardown). Run the loop afterwards so the close callbacks run.
    /// The corresponding libuv call is `uv_walk`.
    public func closeAllHandles() {
        preconditionOnLoopThread()
        precondition(!isClosed, "Loop.closeAllHandles after Loop.close")
        uv_walk(raw, { handle, _ in closeWalkedHandle(handle) }, nil)
    }

    /// Traps when called from a thread other than the one running the loop.
    ///
    /// Outside `run()` any single thread may use the loop (Swift's `Sendable` checking keeps
    /// it from being shared); inside `run()` only the running thread may.
    func preconditionOnLoopThread(_ function: StaticString = #function) {
        let running = runningThread.load(ordering: .relaxed)
        precondition(running == 0 || running == Loop.currentThread, "\(function) called off the loop thread")
    }

    /// Counts a handle whose init succeeded.
    func handleDidOpen() { openHandleCount += 1 }

    /// Counts a handle whose close callback ran.
    func handleDidClose() { openHandleCount -= 1 }

    private static var currentThread: UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }
}

/// Bound to the thread that runs it.
@available(*, unavailable)
extension Loop: Sendable {}
