// A listening Unix socket (`uv_pipe_t`). We create and bind the socket ourselves and hand
// it to libuv with uv_pipe_open: the file gets its mode at creation (umask around bind),
// and libuv, not knowing the path, never unlinks it on close (its uv_pipe_bind sockets are).

import CUV

/// Accepts connections on a Unix socket and hands each to a closure as a ``PipeStream``.
///
/// ```swift
/// let listener = try PipeListener(loop: loop, path: "/run/assetd.sock", mode: 0o660) { stream in
///     sessions.start(stream)
/// }
/// ```
///
/// Closing the listener does not remove the socket file: the daemon unlinks it.
public final class PipeListener: HandleOwner {
    private let handle: Handle<uv_pipe_t>
    private var connectionHandler: ((PipeStream) -> Void)?

    /// Runs when a connection arrived but could not be accepted (for example `UV_EMFILE`);
    /// the listener keeps listening. Unset, such failures are dropped silently.
    public var onAcceptError: ((UVError) -> Void)?

    /// Binds a Unix socket at `path` with file mode `mode` and listens on it.
    ///
    /// The umask is set around the bind (never chmod after), so the socket never exists with
    /// other permissions. umask is process-wide: a file created by another thread at that
    /// very moment gets this umask too.
    ///
    /// - Parameters:
    ///   - path: where to create the socket. It must not exist (see `UV_EADDRINUSE`).
    ///   - mode: the socket file's permission bits, for example `0o600`.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - onConnection: runs on the loop thread with each accepted stream, whose
    ///     ``PipeStream/peerCredentials`` are already read. The receiver must close it.
    /// - Throws: ``UVError``: `UV_ENAMETOOLONG` (call `uv_pipe_bind`) if `path` does not fit
    ///   in `sun_path`, checked before anything is created; `UV_EADDRINUSE` (call `bind`)
    ///   if a file exists at `path`; `UV_ENOENT` or `UV_EACCES` for a bad directory; or an
    ///   error from `uv_pipe_open` or `uv_listen`, after which the new socket file is removed.
    public init(
        loop: Loop, path: String, mode: mode_t, backlog: Int32 = 128,
        onConnection: @escaping (PipeStream) -> Void
    ) throws(UVError) {
        loop.preconditionOnLoopThread()
        try Posix.checkSocketPath(path, call: "uv_pipe_bind")
        let fd = try Posix.bindUnixSocket(path: path, mode: mode)
        do {
            handle = try Handle(loop: loop, call: "uv_pipe_init") { uv_pipe_init($0, $1, 0) }
        } catch {
            Posix.closeDescriptor(fd)
            Posix.removeFile(path)
            throw error
        }
        connectionHandler = onConnection
        handle.adopt(self)

        let opened = uv_pipe_open(handle.raw, fd)
        if opened < 0 { Posix.closeDescriptor(fd) }  // libuv did not adopt the descriptor
        let result =
            opened < 0
            ? opened
            : uv_listen(handle.asStream, backlog) { raw, status in PipeListener.owner(of: raw).onConnection(status) }
        guard result == 0 else {
            handle.close(nil)  // init succeeded, so libuv must see the close (it closes fd if adopted)
            Posix.removeFile(path)
            throw UVError(code: result, call: opened < 0 ? "uv_pipe_open" : "uv_listen")
        }
    }

    /// Stops accepting; `onClosed` runs on the loop thread once libuv has released the
    /// handle. The socket file stays: unlink it yourself. Accepted streams are unaffected.
    /// Idempotent. The corresponding libuv call is `uv_close`.
    public func close(_ onClosed: (() -> Void)? = nil) {
        handle.close(onClosed)
    }

    private func onConnection(_ status: Int32) {
        guard status == 0 else {
            onAcceptError?(UVError(code: status, call: "uv_listen"))
            return
        }
        let stream: PipeStream
        do {
            stream = try PipeStream(loop: handle.loop)
        } catch {
            onAcceptError?(error)
            return
        }
        let accepted = uv_accept(handle.asStream, stream.handle.asStream)
        guard accepted == 0 else {
            stream.close()
            onAcceptError?(UVError(code: accepted, call: "uv_accept"))
            return
        }
        stream.readPeerCredentials()
        connectionHandler?(stream)
    }

    /// From the close callback: frees the handle, drops the closures, runs `onClosed`.
    func didClose() {
        handle.finishClose {
            connectionHandler = nil
            onAcceptError = nil
        }
    }
}

/// Bound to its loop thread.
@available(*, unavailable)
extension PipeListener: Sendable {}
