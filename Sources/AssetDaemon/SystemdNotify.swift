// sd_notify without libsystemd: one datagram to $NOTIFY_SOCKET ("@" means the abstract
// namespace). Nothing happens when the variable is unset.

import Foundation

enum SystemdNotify {
    /// Sends `state` ("READY=1", "STOPPING=1", "RELOADING=1") to the service manager.
    @discardableResult
    static func send(_ state: String) -> Bool {
        guard let target = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !target.isEmpty else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(target.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let sent = state.withCString { msg in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, msg, strlen(msg), 0, $0, length) }
            }
        }
        return sent >= 0
    }
}
