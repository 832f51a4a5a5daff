// A small blocking client for assetd's control socket (assetd(8), CONTROL PROTOCOL): one
// connection, requests sent one line at a time with increasing ids, replies matched by id.
// Event notifications that arrive while a call waits are kept, in order, for
// `nextEvent()`. Not thread-safe.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ControlProtocol
import JSON

/// A connection to assetd's control socket.
public final class ControlClient {
    /// The longest reply line accepted.
    public static let maximumReplyBytes = 1 << 30

    /// The socket path this client connected to.
    public let socketPath: String
    private var fd: Int32
    private var nextID: Int64 = 1
    private var framer = LineFramer(maximumLength: ControlClient.maximumReplyBytes)
    /// Messages read but not yet consumed, oldest first.
    private var inbox: [RPCReply] = []
    private var inboxStart = 0
    /// Events read while a call waited, oldest first.
    private var events: [JSONValue] = []
    private var eventsStart = 0
    private var sawEOF = false
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Connects to the socket at `socketPath`. With a `timeout` (seconds), a connect, send or
    /// receive that waits longer fails with `.io`.
    public init(socketPath: String, timeout: Double? = nil) throws(ClientError) {
        self.socketPath = socketPath
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let pathBytes = Array(socketPath.utf8)
        guard !pathBytes.isEmpty else { throw .unreachable("the socket path is empty") }
        guard pathBytes.count < capacity else {
            throw .unreachable("socket path is \(pathBytes.count) bytes long; at most \(capacity - 1) fit")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        #if canImport(Glibc)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw .unreachable(Errno.describe("socket", errno)) }
        if let timeout {
            var tv = timeval(
                tv_sec: Int(timeout.rounded(.down)),
                tv_usec: .init(((timeout - timeout.rounded(.down)) * 1_000_000).rounded()))
            let size = socklen_t(MemoryLayout<timeval>.size)
            guard setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, size) == 0,
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, size) == 0
            else {
                throw .unreachable(Errno.describe("setsockopt", errno))  // deinit closes fd
            }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        while true {
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
            if rc == 0 { break }
            let e = errno
            if e == EINTR { continue }  // Linux restarts a Unix-socket connect from scratch
            if e == EISCONN { break }  // an interrupted attempt completed meanwhile
            throw .unreachable(Errno.describe("connect", e == EAGAIN ? ETIMEDOUT : e))  // deinit closes fd
        }
    }

    deinit {
        if fd >= 0 { closeDescriptor(fd) }
    }

    /// True until `close()` or until the daemon closed the connection.
    public var isOpen: Bool { fd >= 0 && !sawEOF }

    /// Closes the connection; later calls throw `.closed`. Closing twice is harmless.
    public func close() {
        if fd >= 0 { closeDescriptor(fd) }
        fd = -1
    }

    /// Calls `method` and waits for its reply; events that arrive meanwhile are kept for
    /// `nextEvent()`. An error reply throws `.rpc`.
    @discardableResult
    public func call(_ method: String, _ params: JSONValue = [:]) throws(ClientError) -> JSONValue {
        try call(method, params, progress: nil)
    }

    /// Calls `method` as `call(_:_:)` does, handing each `progress` notification for this
    /// request to `progress` as it arrives (the request should carry `progress: true`).
    @discardableResult
    public func call(
        _ method: String, _ params: JSONValue, progress: ((JSONValue) -> Void)?
    ) throws(ClientError) -> JSONValue {
        let id = nextID
        nextID += 1
        try send(RPCRequest(id: .int(id), method: method, params: params).line())
        while true {
            guard let message = try nextMessage() else { throw .closed }
            switch message {
            case .event(let params):
                events.append(params)
            case .progress(let params):
                if params["id"] == .int(id) { progress?(params) }
            case .result(let replyID, let result) where replyID == .int(id):
                return result
            case .error(let replyID, let error) where replyID == .int(id) || replyID == .null:
                // A null id answers a line the daemon could not read: ours, as we send one at a time.
                throw .rpc(error)
            case .result, .error:
                continue  // a reply to nothing we are waiting for: drop it
            }
        }
    }

    /// Sends a notification: the daemon runs it and never answers, not even with an error.
    public func notify(_ method: String, _ params: JSONValue = [:]) throws(ClientError) {
        try send(RPCRequest(id: nil, method: method, params: params).line())
    }

    /// The next event notification's params, waiting for one if none is buffered; nil once
    /// the daemon closed the connection. Replies read meanwhile are dropped.
    public func nextEvent() throws(ClientError) -> JSONValue? {
        if eventsStart < events.count {
            let event = events[eventsStart]
            eventsStart += 1
            if eventsStart == events.count {
                events.removeAll(keepingCapacity: true)
                eventsStart = 0
            }
            return event
        }
        while true {
            guard let message = try nextMessage() else { return nil }
            if case .event(let params) = message { return params }
        }
    }

    // MARK: - Lines

    private func send(_ bytes: [UInt8]) throws(ClientError) {
        guard fd >= 0 else { throw .closed }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                sendWithoutSignal(fd, raw.baseAddress! + sent, raw.count - sent)  // non-empty: a line ends in "\n"
            }
            if n >= 0 {
                sent += n
                continue
            }
            let e = errno
            switch e {
            case EINTR: continue
            case EPIPE, ECONNRESET: throw .closed
            case EAGAIN, EWOULDBLOCK: throw .io("send: timed out")
            default: throw .io(Errno.describe("send", e))
            }
        }
    }

    /// The next message from the daemon, reading as needed; nil at end of stream.
    private func nextMessage() throws(ClientError) -> RPCReply? {
        while inboxStart == inbox.count {
            inbox.removeAll(keepingCapacity: true)
            inboxStart = 0
            guard fd >= 0 else { throw .closed }
            if sawEOF { return nil }
            try readMore()
        }
        let message = inbox[inboxStart]
        inboxStart += 1
        return message
    }

    private func readMore() throws(ClientError) {
        let count = readBuffer.count
        let n = readBuffer.withUnsafeMutableBytes { raw in
            recv(fd, raw.baseAddress!, count, 0)  // a 64 KiB array: never empty
        }
        if n < 0 {
            let e = errno
            switch e {
            case EINTR: return
            case ECONNRESET: sawEOF = true; return
            case EAGAIN, EWOULDBLOCK: throw .io("recv: timed out waiting for assetd")
            default: throw .io(Errno.describe("recv", e))
            }
        }
        if n == 0 {
            sawEOF = true
            return
        }
        let items = readBuffer.withUnsafeBytes { raw in framer.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
        for item in items {
            switch item {
            case .tooLong:
                throw .io("a reply longer than \(ControlClient.maximumReplyBytes) bytes")
            case .line(let bytes):
                let json: JSONValue
                do {
                    json = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
                        try JSONValue.parse(buffer)
                    }
                } catch {
                    throw .io("assetd sent a line that is not JSON: \(error)")
                }
                guard let message = RPCReply.parse(json) else {
                    throw .io("assetd sent a line that is neither a reply nor an event")
                }
                inbox.append(message)
            }
        }
    }
}

/// close(2), out of reach of the method of the same name.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

/// send(2) with MSG_NOSIGNAL: a peer gone is EPIPE, never SIGPIPE.
private func sendWithoutSignal(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    send(fd, bytes, count, Int32(MSG_NOSIGNAL))
}
