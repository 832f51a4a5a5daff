// JSON-RPC 2.0 errors as assetd sends them: the standard codes, and -32000 with a stable
// `data.code` for application errors (assetd(8), CONTROL PROTOCOL, Errors). The protocol owns these
// codes; the engine's errors are mapped to them in one place, in AssetService.

import JSON

/// A JSON-RPC error object.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The JSON-RPC code.
    public var code: Int
    /// A sentence for people; never SQL.
    public var message: String
    /// `{"code": "<stable code>", …}` for application errors.
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603
    public static let applicationCode = -32000

    /// The line was not valid JSON.
    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: parseErrorCode, message: "parse error: \(detail)")
    }

    /// Valid JSON, but not a request.
    public static func invalidRequest(_ why: String) -> RPCError {
        RPCError(code: invalidRequestCode, message: "invalid request: \(why)")
    }

    /// A line longer than the limit; the connection is closed after it.
    public static func requestTooLarge(limit: Int) -> RPCError {
        RPCError(
            code: invalidRequestCode, message: "request longer than \(limit) bytes",
            data: .object(["code": .string(Code.requestTooLarge.rawValue)]))
    }

    /// A request whose parsed params would hold more than a connection may hold
    /// (control.connection_input_bytes); the connection stays open.
    public static func requestTooHeavy(holding bytes: Int, limit: Int) -> RPCError {
        RPCError(
            code: invalidRequestCode,
            message: "request holds about \(bytes) bytes parsed, more than control.connection_input_bytes (\(limit))",
            data: .object([
                "code": .string(Code.requestTooLarge.rawValue),
                "detail": ["limit": "control.connection_input_bytes", "value": .int(Int64(limit))],
            ]))
    }

    /// Every request's answer while the daemon stops.
    public static let shuttingDown = application(.shuttingDown, "assetd is shutting down")

    /// No such method.
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "no method \"\(method)\"")
    }

    /// Params missing or of the wrong type.
    public static func invalidParams(_ why: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "invalid params: \(why)", data: .object(["code": "invalid_params"]))
    }

    /// An application error with a stable code.
    public static func application(_ code: Code, _ message: String, detail: JSONValue? = nil) -> RPCError {
        var data: [String: JSONValue] = ["code": .string(code.rawValue)]
        if let detail { data["detail"] = detail }
        return RPCError(code: applicationCode, message: message, data: .object(data))
    }

    /// The stable `data.code`, if any.
    public var stableCode: String? { data?["code"]?.stringValue }

    /// The error object as JSON.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { o["data"] = data }
        return .object(o)
    }

    /// Reads an error object.
    public init?(json: JSONValue) {
        guard let c = json["code"]?.intValue, let m = json["message"]?.stringValue else { return nil }
        self.init(code: Int(c), message: m, data: json["data"])
    }

    public var description: String { stableCode.map { "\($0): \(message)" } ?? message }
}

extension RPCError {
    /// The stable `data.code` strings of application errors, which clients match on. The
    /// engine's codes are here under the same names; `shuttingDown` and `requestTooLarge`
    /// only the protocol layer produces.
    public enum Code: String, Sendable, CaseIterable {
        case invalidParams = "invalid_params"
        case notFound = "not_found"
        case conflict
        case invalidPath = "invalid_path"
        case pathOutsideRoots = "path_outside_roots"
        case notARegularFile = "not_a_regular_file"
        case unsafePath = "unsafe_path"
        case invalidRules = "invalid_rules"
        case danglingEdge = "dangling_edge"
        case deleteDenied = "delete_denied"
        case queryRejected = "query_rejected"
        case permissionDenied = "permission_denied"
        case storageFull = "storage_full"
        case untaggedRoot = "untagged_root"
        case busy
        /// A reply larger than the daemon's control.max_reply_bytes.
        case replyTooLarge = "reply_too_large"
        /// A lease past control.max_lease_entries_per_connection or control.total_lease_entries.
        case leaseLimit = "lease_limit"
        /// A request whose rules would delete more objects than control.max_cascade_objects
        /// (or its deletions remove more edges than ten times that, plus ten).
        case cascadeLimit = "cascade_limit"
        case internalError = "internal"
        /// The daemon is stopping: the request was not run.
        case shuttingDown = "shutting_down"
        /// A request line over control.max_request_bytes (the connection is closed after it), or
        /// one whose parsed params would hold more than control.connection_input_bytes.
        case requestTooLarge = "request_too_large"
    }
}
