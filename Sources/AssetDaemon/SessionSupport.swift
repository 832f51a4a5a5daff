// Small pieces the sessions share with the server and the daemon: a box handed from a worker
// thread to the loop, the shutting_down error, and a monotonic clock.

import ControlProtocol
import Foundation

/// Written on a pool thread, read on the loop thread after libuv's `done`, which orders the two.
final class Box<T>: @unchecked Sendable {
    var value: T?
}

extension RPCError {
    /// The same error with data.code `shutting_down`.
    var shuttingDown: RPCError {
        RPCError(code: RPCError.applicationCode, message: message, data: .object(["code": "shutting_down"]))
    }
}

/// Monotonic seconds.
enum QueryClock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
