// The error every request gets while the daemon stops.

import ControlProtocol

extension RPCError {
    /// The same error with data.code `shutting_down`.
    var shuttingDown: RPCError {
        RPCError(code: RPCError.applicationCode, message: message, data: .object(["code": "shutting_down"]))
    }
}
