// One connected Unix socket (`uv_pipe_t` used as a stream): reads into a 64 KiB buffer
// reused per stream, writes copies of the caller's bytes, and closes exactly once. After
// close() or shutdownAndClose() no read callback runs again; pending writes end with ECANCELED.

import CUV
import Glibc

/// A connected Unix-domain stream socket: accepted by a ``PipeListener`` or made by
/// ``connect(loop:path:_:)``. Loop-bound; whoever receives it must close it.
public final class PipeStream: HandleOwner {
    /// Bytes read per `uv_read` callback at most; one buffer per stream, reused.
    static let readBufferSize = 64 * 1024

    /// The pipe handle; the listener accepts into it.
    let handle: Handle<uv_pipe_t>
    private var readBuffer: UnsafeMutableRawBufferPointer?
    private var dataHandler: ((UnsafeRawBufferPointer) -> Void)?
    private var endHandler: ((UVError?) -> Void)?
    private var isShuttingDown = false
    /// Between a successful `uv_read_start` and stopReading(), the end of reading, or close.
    private var isReading = false

    /// The peer's pid, uid and gid (`SO_PEERCRED`), read once when the stream was accepted
    /// or connected; nil if the kernel did not say.
    public private(set) var peerCredentials: PeerCredentials?

    /// A new, unconnected pipe handle; the listener accepts into it, or connect() connects it.
    init(loop: Loop) throws(UVError) {
        handle = try Handle(loop: loop, call: "uv_pipe_init") { uv_pipe_init($0, $1, 0) }
        handle.adopt(self)
    }

    /// Connects to the Unix socket at `path`; `done` runs on the loop thread with the
    /// connected stream or the error (`UV_ENOENT`, `UV_ECONNREFUSED`, `UV_EACCES`...).
    /// The corresponding libuv call is `uv_pipe_connect`.
    ///
    /// - Throws: ``UVError`` with `UV_ENAMETOOLONG` if `path` does not fit in `sun_path`
    ///   (libuv 1.44 would truncate it), or from `uv_pipe_init`; `done` then never runs.
    public static func connect(
        loop: Loop, path: String, _ done: @escaping (Result<PipeStream, UVError>) -> Void
    ) throws(UVError) {
        loop.preconditionOnLoopThread()
        try Posix.checkSocketPath(path, call: "uv_pipe_connect")
        let stream = try PipeStream(loop: loop)
        let request = ConnectRequest(stream: stream, done: done)
        request.retainWhileInFlight(request.raw)
        // uv_pipe_connect returns nothing in 1.44: even an immediate failure arrives in the callback.
        uv_pipe_connect(request.raw, stream.handle.raw, path) { raw, status in
            ConnectRequest.takeFromFlight(raw).onConnect(status)
        }
    }

    /// True once ``close(_:)`` or ``shutdownAndClose(_:)`` has been called: the stream
    /// accepts no more reads or writes.
    public var isClosed: Bool {
        handle.loop.preconditionOnLoopThread()
        return handle.state != .open || isShuttingDown
    }

    /// Starts delivering what the peer sends. Calling it again replaces the closures.
    /// The corresponding libuv call is `uv_read_start`.
    ///
    /// - Parameters:
    ///   - onData: receives each chunk read. The buffer is valid only during the call (it is
    ///     reused for the next read): copy what you keep.
    ///   - onEnd: runs once when reading ends by itself: nil at end of stream (the peer closed
    ///     or shut down its side), or the error (`UV_ECONNRESET`...). No `onData` follows it.
    ///     It does not run when you stop reading or close the stream yourself.
    /// - Throws: ``UVError`` `UV_ECANCELED` if the stream is closed, or from `uv_read_start`.
    public func startReading(
        _ onData: @escaping (UnsafeRawBufferPointer) -> Void, onEnd: @escaping (UVError?) -> Void
    ) throws(UVError) {
        handle.loop.preconditionOnLoopThread()
        guard handle.state == .open, !isShuttingDown else {
            throw UVError(code: UV_ECANCELED.rawValue, call: "uv_read_start")
        }
        if readBuffer == nil {
            readBuffer = .allocate(byteCount: PipeStream.readBufferSize, alignment: 16)
        }
        dataHandler = onData
        endHandler = onEnd
        guard !isReading else { return }  // libuv 1.44 answers UV_EALREADY; replacing the closures is enough
        let result = uv_read_start(
            handle.asStream,
            { raw, _, buffer in PipeStream.owner(of: raw).onAlloc(buffer!) },  // buffer!: libuv always passes one
            { raw, count, _ in PipeStream.owner(of: raw).onRead(count) })
        if result < 0 {
            dataHandler = nil
            endHandler = nil
            throw UVError(code: result, call: "uv_read_start")
        }
        isReading = true
    }

    /// Stops delivering data (and drops the closures); ``startReading(_:onEnd:)`` resumes.
    /// A no-op once closed. The corresponding libuv call is `uv_read_stop`.
    public func stopReading() {
        handle.loop.preconditionOnLoopThread()
        if handle.state == .open { uv_read_stop(handle.asStream) }
        isReading = false
        dataHandler = nil
        endHandler = nil
    }

    /// Queues `bytes` (copied) for writing; `done` runs on the loop thread when the kernel
    /// has taken them all, or with the error (`UV_EPIPE` or `UV_ECONNRESET` if the peer has
    /// gone, `UV_ECANCELED` if the stream was closed first). The corresponding libuv call is `uv_write`.
    ///
    /// If the write cannot even be queued (the stream is already closed, or `uv_write`
    /// refuses), `done` runs at once, before this method returns. It never runs twice.
    ///
    /// The process must ignore `SIGPIPE` (`signal(SIGPIPE, SIG_IGN)`): libuv writes to Unix
    /// sockets with `write(2)`, so a vanished peer otherwise kills the process.
    public func write(_ bytes: [UInt8], _ done: ((UVError?) -> Void)? = nil) {
        handle.loop.preconditionOnLoopThread()
        guard handle.state == .open else {
            done?(UVError(code: UV_ECANCELED.rawValue, call: "uv_write"))
            return
        }
        let request = WriteRequest(copying: bytes, stream: self, done: done)
        var buffer = request.buffer
        request.retainWhileInFlight(request.raw)
        let result = uv_write(request.raw, handle.asStream, &buffer, 1) { raw, status in
            WriteRequest.takeFromFlight(raw).onWrite(status)
        }
        if result < 0 {
            WriteRequest.takeFromFlight(request.raw).done?(UVError(code: result, call: "uv_write"))
        }
    }

    /// Writes what the kernel takes at once, without queuing anything, and returns how many
    /// bytes that was: 0 when it would block, when earlier writes are still queued (so order
    /// is kept), or on an error (a following ``write(_:_:)`` reports it). A reply written whole
    /// this way costs no request, no completion and no epoll update. The corresponding libuv
    /// call is `uv_try_write`.
    public func tryWrite(_ bytes: UnsafeRawBufferPointer) -> Int {
        handle.loop.preconditionOnLoopThread()
        guard handle.state == .open, bytes.count > 0, let base = bytes.baseAddress else { return 0 }
        var buffer = uv_buf_init(
            UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
        let n = uv_try_write(handle.asStream, &buffer, 1)
        return n > 0 ? Int(n) : 0
    }

    /// Bytes accepted by ``write(_:_:)`` but not yet taken by the kernel: the backpressure
    /// signal. 0 once closed. The corresponding libuv call is `uv_stream_get_write_queue_size`.
    public var writeQueueSize: Int {
        handle.loop.preconditionOnLoopThread()
        guard handle.state != .closed else { return 0 }
        return uv_stream_get_write_queue_size(handle.asStream)
    }

    /// Stops reading, lets queued writes finish, shuts down the write side (the peer reads
    /// end of stream), then closes. `onClosed` runs when the close completes. A no-op on a
    /// closed stream except for `onClosed`. The corresponding libuv calls are `uv_shutdown` and `uv_close`.
    public func shutdownAndClose(_ onClosed: (() -> Void)? = nil) {
        handle.loop.preconditionOnLoopThread()
        guard handle.state == .open, !isShuttingDown else {
            handle.close(onClosed)
            return
        }
        stopReading()
        isShuttingDown = true
        let request = ShutdownRequest(stream: self, onClosed: onClosed)
        request.retainWhileInFlight(request.raw)
        let result = uv_shutdown(request.raw, handle.asStream) { raw, _ in
            ShutdownRequest.takeFromFlight(raw).onShutdown()
        }
        if result < 0 {
            close(ShutdownRequest.takeFromFlight(request.raw).onClosed)
        }
    }

    /// Closes the stream at once: reading stops, pending writes end with `UV_ECANCELED`,
    /// `onClosed` runs on the loop thread once libuv has released it. Idempotent: a second
    /// call's `onClosed` also runs. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.loop.preconditionOnLoopThread()
        isReading = false
        dataHandler = nil
        endHandler = nil
        handle.close(onClosed)
    }

    /// True when the peer has closed both directions, not only its writing side: nothing
    /// written reaches it any more. Asked of the socket without waiting; false if it cannot tell.
    public var peerHungUp: Bool {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle.asHandle, &fd) == 0 else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP) != 0
    }

    /// Reads SO_PEERCRED once, right after accept or connect.
    func readPeerCredentials() {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle.asHandle, &fd) == 0 else { return }
        peerCredentials = Posix.peerCredentials(of: fd)
    }

    private func onAlloc(_ buffer: UnsafeMutablePointer<uv_buf_t>) {
        let readBuffer = readBuffer!  // allocated by startReading, which reading requires
        buffer.pointee = uv_buf_init(
            readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(readBuffer.count))
    }

    private func onRead(_ count: Int) {
        if count > 0 {
            dataHandler?(UnsafeRawBufferPointer(start: readBuffer!.baseAddress, count: count))
            return
        }
        guard count < 0 else { return }  // 0 is EAGAIN: nothing read, nothing ended
        uv_read_stop(handle.asStream)
        isReading = false
        let onEnd = endHandler
        dataHandler = nil
        endHandler = nil
        onEnd?(count == Int(UV_EOF.rawValue) ? nil : UVError(code: Int32(count), call: "uv_read"))
    }

    /// From the close callback: frees the handle, drops the closures, runs `onClosed`.
    func didClose() {
        handle.finishClose {
            readBuffer?.deallocate()
            readBuffer = nil
            dataHandler = nil
            endHandler = nil
        }
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension PipeStream: Sendable {}
