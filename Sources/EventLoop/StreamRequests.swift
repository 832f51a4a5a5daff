// The requests a PipeStream puts in flight: write, shutdown, connect. Each is retained by
// libuv from submit to completion (Handle.swift) and frees its request memory in deinit.
// A write owns a private copy of its bytes, so the caller's array may change at once.

import CUV

/// One `uv_write_t` in flight with its bytes and completion.
final class WriteRequest: RequestOwner {
    /// The request's memory, freed in deinit.
    let raw = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
    /// Our copy of the caller's bytes, at least 1 byte long so its address is never nil.
    private let bytes: UnsafeMutableRawBufferPointer
    private let byteCount: UInt32
    /// Keeps the stream alive until the write completes.
    private let stream: PipeStream
    /// The caller's completion: nil on success, else the error.
    let done: ((UVError?) -> Void)?

    /// Copies `source`, so the caller may reuse its array at once.
    init(copying source: [UInt8], stream: PipeStream, done: ((UVError?) -> Void)?) {
        precondition(source.count <= Int(UInt32.max), "a single write is limited to 4 GiB")
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 1)
        bytes.copyBytes(from: source)
        self.stream = stream
        self.done = done
        byteCount = UInt32(source.count)
    }

    deinit {
        raw.deallocate()
        bytes.deallocate()
    }

    /// The one buffer to pass to `uv_write`, which copies the descriptor (not the bytes).
    var buffer: uv_buf_t {
        uv_buf_init(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), byteCount)  // baseAddress!: count >= 1
    }

    /// The write completed (status 0) or failed; runs on the loop thread.
    func onWrite(_ status: Int32) {
        done?(status < 0 ? UVError(code: status, call: "uv_write") : nil)
    }
}

/// One `uv_shutdown_t` in flight; the stream closes when it completes, whatever the status.
final class ShutdownRequest: RequestOwner {
    /// The request's memory, freed in deinit.
    let raw = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
    private let stream: PipeStream
    /// Passed on to the stream's close.
    let onClosed: (() -> Void)?

    /// A shutdown of `stream` that closes it afterwards.
    init(stream: PipeStream, onClosed: (() -> Void)?) {
        self.stream = stream
        self.onClosed = onClosed
    }

    deinit { raw.deallocate() }

    /// Queued writes are flushed (or failed); the close follows either way.
    func onShutdown() {
        stream.close(onClosed)
    }
}

/// One `uv_connect_t` in flight for ``PipeStream/connect(loop:path:_:)``.
final class ConnectRequest: RequestOwner {
    /// The request's memory, freed in deinit.
    let raw = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
    private let stream: PipeStream
    private let done: (Result<PipeStream, UVError>) -> Void

    /// A connect of `stream`, reporting to `done`.
    init(stream: PipeStream, done: @escaping (Result<PipeStream, UVError>) -> Void) {
        self.stream = stream
        self.done = done
    }

    deinit { raw.deallocate() }

    /// Reads the peer's credentials on success; closes the never-connected handle on failure.
    func onConnect(_ status: Int32) {
        guard status == 0 else {
            stream.close()  // init succeeded, so the handle must be closed even though it never connected
            done(.failure(UVError(code: status, call: "uv_pipe_connect")))
            return
        }
        stream.readPeerCredentials()
        done(.success(stream))
    }
}
