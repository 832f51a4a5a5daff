// What is at the socket path before binding: nothing, a live daemon (refuse), a stale
// socket from a dead one (replace), or something that is not a socket (refuse).

import Foundation

enum SocketProbe {
    enum State: Equatable {
        case absent
        case live
        case stale
        case notASocket
    }

    static func state(of path: String) -> State {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .notASocket }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .live }  // cannot tell: do not touch it
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return .live }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if r == 0 { return .live }
        return errno == ECONNREFUSED ? .stale : .live
    }
}
