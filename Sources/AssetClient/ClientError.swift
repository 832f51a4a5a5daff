// What a ControlClient call can fail with: the daemon out of reach, an error it answered,
// trouble on the connection, or a connection already closed. Each keeps the reason for people.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ControlProtocol

/// A failed connect, call or read on the control socket.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The socket could not be connected (ENOENT, ECONNREFUSED, EACCES, a path too long…).
    case unreachable(String)
    /// The daemon answered with a JSON-RPC error.
    case rpc(RPCError)
    /// Reading or writing failed, the reply was malformed, or a timeout passed.
    case io(String)
    /// The connection is closed: by `close()`, or by the daemon before it answered.
    case closed

    public var description: String {
        switch self {
        case .unreachable(let why): return "cannot connect: \(why)"
        case .rpc(let e): return e.description
        case .io(let why): return why
        case .closed: return "the connection is closed"
        }
    }
}

/// `errno` as people and logs read it: `connect: ENOENT (No such file or directory)`.
enum Errno {
    static func describe(_ call: String, _ code: Int32) -> String {
        let text = strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return "\(call): \(name(code)) (\(text))"
    }

    static func name(_ code: Int32) -> String {
        switch code {
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case EINTR: return "EINTR"
        case EBADF: return "EBADF"
        case EAGAIN: return "EAGAIN"
        case ENOMEM: return "ENOMEM"
        case EACCES: return "EACCES"
        case ENOTDIR: return "ENOTDIR"
        case EINVAL: return "EINVAL"
        case ENFILE: return "ENFILE"
        case EMFILE: return "EMFILE"
        case EPIPE: return "EPIPE"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        case ELOOP: return "ELOOP"
        case ENOTSOCK: return "ENOTSOCK"
        case EPROTOTYPE: return "EPROTOTYPE"
        case ECONNRESET: return "ECONNRESET"
        case ENOBUFS: return "ENOBUFS"
        case ETIMEDOUT: return "ETIMEDOUT"
        case ECONNREFUSED: return "ECONNREFUSED"
        case EROFS: return "EROFS"
        default: return "errno \(code)"
        }
    }
}
