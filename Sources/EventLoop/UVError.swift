// A failed libuv call: the negative code libuv returned and the call that returned it.
// Codes are compared as libuv's `UV_E*` values, never as errno, because libuv remaps some
// (errors.rst). Names and messages come from the reentrant `_r` variants, which never leak.

import CUV

/// An error returned by libuv (or by a raw syscall made on libuv's behalf).
///
/// It prints like `uv_pipe_bind: EADDRINUSE (address already in use)`.
/// Match it with a ``Code``: `catch UVError.Code.addressInUse` or
/// `error.code == UVError.Code.addressInUse.rawValue`.
public struct UVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The negative libuv code, for example `UV_EADDRINUSE`.
    public let code: Int32
    /// The C function that failed, for example `"uv_pipe_bind"`.
    public let call: String

    /// Creates an error from a libuv code (negative) and the name of the call.
    public init(code: Int32, call: String) {
        self.code = code
        self.call = call
    }

    /// The error's symbolic name, such as `EADDRINUSE`. The corresponding libuv call is `uv_err_name_r`.
    public var name: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            String(cString: uv_err_name_r(code, buffer.baseAddress, buffer.count))
        }
    }

    /// The error's text, such as `address already in use`. The corresponding libuv call is `uv_strerror_r`.
    public var message: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            String(cString: uv_strerror_r(code, buffer.baseAddress, buffer.count))
        }
    }

    /// `call: NAME (message)`, for logs.
    public var description: String { "\(call): \(name) (\(message))" }

    /// Throws if `result` is negative, the way every libuv call reports failure.
    static func check(_ result: Int32, _ call: String) throws(UVError) {
        if result < 0 { throw UVError(code: result, call: call) }
    }
}

extension UVError {
    /// A libuv error code with a Swift name, so that callers need not import CUV.
    public struct Code: Hashable, Sendable {
        /// The negative libuv value.
        public let rawValue: Int32

        /// Wraps a raw libuv code.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        init(_ value: uv_errno_t) { rawValue = value.rawValue }

        /// The address (socket path) is already bound. The corresponding libuv constant is `UV_EADDRINUSE`.
        public static let addressInUse = Code(UV_EADDRINUSE)
        /// A socket path does not fit in `sun_path`. The corresponding libuv constant is `UV_ENAMETOOLONG`.
        public static let nameTooLong = Code(UV_ENAMETOOLONG)
        /// Handles are still open. The corresponding libuv constant is `UV_EBUSY`.
        public static let busy = Code(UV_EBUSY)
        /// The peer ended the stream. The corresponding libuv constant is `UV_EOF`.
        public static let endOfFile = Code(UV_EOF)
        /// Writing to a stream whose peer has gone. The corresponding libuv constant is `UV_EPIPE`.
        public static let brokenPipe = Code(UV_EPIPE)
        /// The peer reset the connection. The corresponding libuv constant is `UV_ECONNRESET`.
        public static let connectionReset = Code(UV_ECONNRESET)
        /// Nobody listens on the socket. The corresponding libuv constant is `UV_ECONNREFUSED`.
        public static let connectionRefused = Code(UV_ECONNREFUSED)
        /// No such file or directory. The corresponding libuv constant is `UV_ENOENT`.
        public static let noSuchFile = Code(UV_ENOENT)
        /// Permission denied. The corresponding libuv constant is `UV_EACCES`.
        public static let permissionDenied = Code(UV_EACCES)
        /// The operation was canceled because its handle closed. The corresponding libuv constant is `UV_ECANCELED`.
        public static let canceled = Code(UV_ECANCELED)
        /// An invalid argument. The corresponding libuv constant is `UV_EINVAL`.
        public static let invalidArgument = Code(UV_EINVAL)

        /// Matches an error against a code in a `catch` or `switch`.
        public static func ~= (pattern: Code, error: UVError) -> Bool { error.code == pattern.rawValue }

        /// Matches any error against a code, for untyped `catch` clauses.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? UVError)?.code == pattern.rawValue
        }
    }
}
