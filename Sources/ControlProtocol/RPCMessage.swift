// JSON-RPC 2.0 messages, one per line (SPEC §6): requests parsed strictly, replies and event
// notifications encoded as single lines.

import AssetStore

/// A parsed request. A request without `id` is a notification: executed, never answered.
public struct RPCRequest: Sendable, Equatable {
    /// The id to answer with; nil for a notification.
    public var id: JSONValue?
    /// The method name.
    public var method: String
    /// The params (an object, or `{}` when absent).
    public var params: JSONValue

    public init(id: JSONValue?, method: String, params: JSONValue = .object([:])) {
        self.id = id
        self.method = method
        self.params = params
    }

    /// True if no reply is expected.
    public var isNotification: Bool { id == nil }

    /// Parses one line (without its newline). On failure, the error and the id to answer
    /// with (`null` when the id could not be read).
    public static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<RPCRequest, RPCFailure> {
        let parsed: [(String, JSONValue)]?
        do {
            // The envelope's members are read off in order: no dictionary for four names.
            parsed = try JSONValue.parseMembers(line)
        } catch {
            return .failure(RPCFailure(id: .null, error: .parseError(error.reason)))
        }
        guard let members = parsed else {
            return .failure(RPCFailure(id: .null, error: .invalidRequest("a request is a JSON object")))
        }
        var id: JSONValue?, jsonrpc: JSONValue?, method: JSONValue?, params: JSONValue?
        for (name, value) in members {  // a repeated name: the last one counts, as in an object
            switch name {
            case "id": id = value
            case "jsonrpc": jsonrpc = value
            case "method": method = value
            case "params": params = value
            default: break
            }
        }
        return validate(id: id, jsonrpc: jsonrpc, method: method, params: params)
    }

    /// Validates a parsed JSON value as a request.
    public static func parse(_ json: JSONValue) -> Result<RPCRequest, RPCFailure> {
        guard case .object(let o) = json else {
            return .failure(RPCFailure(id: .null, error: .invalidRequest("a request is a JSON object")))
        }
        return validate(id: o["id"], jsonrpc: o["jsonrpc"], method: o["method"], params: o["params"])
    }

    private static func validate(id raw: JSONValue?, jsonrpc: JSONValue?, method m: JSONValue?, params p: JSONValue?)
        -> Result<RPCRequest, RPCFailure>
    {
        var id: JSONValue?
        if let raw {
            switch raw {
            case .string, .int, .double, .null: id = raw
            default: return .failure(RPCFailure(id: .null, error: .invalidRequest("id must be a string, number or null")))
            }
        }
        let answerID = id ?? .null
        guard jsonrpc == .string("2.0") else {
            return .failure(RPCFailure(id: answerID, error: .invalidRequest("jsonrpc must be \"2.0\""), notification: id == nil))
        }
        guard case .string(let method)? = m, !method.isEmpty else {
            return .failure(RPCFailure(id: answerID, error: .invalidRequest("method must be a string"), notification: id == nil))
        }
        let params = p ?? .object([:])
        switch params {
        case .object: break
        case .null: return .success(RPCRequest(id: id, method: method))
        default:
            return .failure(RPCFailure(id: answerID, error: .invalidParams("params must be an object"), notification: id == nil))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    /// The request as one line, newline included.
    public func line() -> [UInt8] {
        var o: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        if let id { o["id"] = id }
        return RPCLine.encode(.object(o))
    }
}

/// A request that could not be accepted, with the id to answer.
public struct RPCFailure: Error, Sendable, Equatable {
    /// The id for the error reply.
    public var id: JSONValue
    /// What was wrong.
    public var error: RPCError
    /// True if it was a notification after all (no reply is sent).
    public var notification: Bool = false
}

/// Encoding of outgoing lines.
public enum RPCLine {
    /// `value` serialised plus "\n".
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(128)
        value.write(to: &out)
        out.append(10)
        return out
    }

    /// A success reply, written directly in `encode`'s sorted key order (no wrapper object).
    public static func result(id: JSONValue, _ result: JSONValue) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(128)
        out.append(contentsOf: #"{"id":"#.utf8)
        id.write(to: &out)
        out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
        result.write(to: &out)
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// A success reply whose result is already JSON text (spliced, not parsed again); the
    /// keys come out in the sorted order `encode` uses.
    public static func result(id: JSONValue, rawResult: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(rawResult.count + 48)
        out.append(contentsOf: #"{"id":"#.utf8)
        id.write(to: &out)
        out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
        out.append(contentsOf: rawResult)
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// An error reply.
    public static func error(id: JSONValue, _ error: RPCError) -> [UInt8] {
        encode(.object(["jsonrpc": "2.0", "id": id, "error": error.json]))
    }

    /// A server event: a notification with method `event`.
    public static func event(_ params: JSONValue) -> [UInt8] {
        encode(.object(["jsonrpc": "2.0", "method": "event", "params": params]))
    }

    /// A `progress` notification for the request `id` (sent only when it asked with `progress: true`).
    public static func progress(id: JSONValue, _ fields: [String: JSONValue]) -> [UInt8] {
        var params = fields
        params["id"] = id
        return encode(.object(["jsonrpc": "2.0", "method": "progress", "params": .object(params)]))
    }
}

/// A reply read by a client.
public enum RPCReply: Sendable, Equatable {
    case result(id: JSONValue, JSONValue)
    case error(id: JSONValue, RPCError)
    case event(JSONValue)
    /// A `progress` notification's params: `{id, phase, done, total}`.
    case progress(JSONValue)

    /// Parses a line a server sent.
    public static func parse(_ json: JSONValue) -> RPCReply? {
        if json["method"] == "event", let params = json["params"] { return .event(params) }
        if json["method"] == "progress", let params = json["params"] { return .progress(params) }
        let id = json["id"] ?? .null
        if let r = json["result"] { return .result(id: id, r) }
        if let e = json["error"], let err = RPCError(json: e) { return .error(id: id, err) }
        return nil
    }
}
