// JSON-RPC 2.0 errors as assetd sends them: the standard codes, and -32000 with a stable
// `data.code` for application errors (SPEC §6). Engine errors map here, in one place.

import AssetStore

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
            data: .object(["code": "request_too_large"]))
    }

    /// No such method.
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "no method \"\(method)\"")
    }

    /// Params missing or of the wrong type.
    public static func invalidParams(_ why: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "invalid params: \(why)", data: .object(["code": "invalid_params"]))
    }

    /// An application error with a stable code.
    public static func application(_ code: StoreError.Code, _ message: String, detail: JSONValue? = nil) -> RPCError {
        var data: [String: JSONValue] = ["code": .string(code.rawValue)]
        if let detail { data["detail"] = detail }
        return RPCError(code: applicationCode, message: message, data: .object(data))
    }

    /// The engine's error as the protocol reports it.
    public init(_ e: StoreError) {
        switch e.code {
        case .invalidParams: self = .invalidParams(e.message)
        case .internalError: self = RPCError(code: RPCError.internalErrorCode, message: e.message)
        default: self = .application(e.code, e.message, detail: e.detail)
        }
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

extension StoreError.Code {
    /// Codes only the protocol layer produces.
    public static let shuttingDownCode = "shutting_down"
    public static let requestTooLargeCode = "request_too_large"
}
