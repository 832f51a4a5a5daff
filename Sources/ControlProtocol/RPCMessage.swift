// JSON-RPC 2.0 messages, one per line (assetd(8), CONTROL PROTOCOL, Framing): requests parsed
// strictly, replies and event notifications encoded as single lines.

import JSON

/// A request id, echoed in the reply as the client wrote it. A string without escapes or an
/// integer written the usual way (almost every id) is written again from its value, with no
/// copy; any other number (`1e400`, `1.50`, `-0`) or escaped string keeps its text, since its
/// value would print differently and the client might not match its reply.
public struct RPCID: Sendable, Hashable, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    /// The id's value.
    public let value: JSONValue
    /// The id's text when the value would print otherwise; nil for the common id.
    let text: [UInt8]?

    /// The null id, for a reply to a request whose id could not be read.
    public static let null = RPCID(.null)

    /// An id written as `value` prints.
    public init(_ value: JSONValue) {
        self.value = value
        text = nil
    }

    public init(integerLiteral value: Int64) { self.init(.int(value)) }
    public init(stringLiteral value: String) { self.init(.string(value)) }

    /// The id as it came in: its text is kept unless the value prints it the same way.
    init(_ value: JSONValue, text bytes: UnsafeBufferPointer<UInt8>) {
        self.value = value
        switch value {
        case .int(let i) where !(i == 0 && bytes.first == UInt8(ascii: "-")):
            text = nil  // JSON has one spelling of an integer but for -0
        case .int, .double: text = Array(bytes)
        case .string where bytes.contains(UInt8(ascii: "\\")): text = Array(bytes)  // escapes print otherwise
        default: text = nil
        }
    }

    /// Appends the id's JSON text.
    public func write(to out: inout [UInt8]) {
        if let text { out.append(contentsOf: text) } else { value.write(to: &out) }
    }
}

/// A parsed request. A request without `id` is a notification: executed, never answered.
public struct RPCRequest: Sendable, Equatable {
    /// The id to answer with; nil for a notification.
    public var id: RPCID?
    /// The method name.
    public var method: String
    /// The params (an object, or `{}` when absent); made from `paramMembers` on each read when
    /// the request came as text.
    public var params: JSONValue {
        get { paramMembers.map(JSONValue.init(members:)) ?? storedParams }
        set {
            storedParams = newValue
            paramMembers = nil
        }
    }
    /// The params' members in text order (a repeated name the last counts) when the request
    /// was parsed from text: a method that reads a few names (a point read) spares the
    /// dictionary, about a fifth of such a request's cost.
    public private(set) var paramMembers: [JSONMember]?
    private var storedParams: JSONValue

    /// Builds the params object from the members now, so reading `params` later builds
    /// nothing: a long line's are built on the thread that parsed it, not on the loop.
    public mutating func buildParams() {
        if let members = paramMembers { params = JSONValue(members: members) }
    }

    /// About the memory the parsed request holds, its params above all (`JSONValue.heldBytes`):
    /// what a daemon counts it for while it runs.
    public var heldBytes: Int {
        (paramMembers.map(JSONMember.heldBytes(of:)) ?? storedParams.heldBytes) + JSONValue.heldBytes(of: method)
    }

    public init(id: JSONValue?, method: String, params: JSONValue = .object([:])) {
        self.id = id.map(RPCID.init)
        self.method = method
        storedParams = params
    }

    public static func == (a: RPCRequest, b: RPCRequest) -> Bool {
        a.id == b.id && a.method == b.method && a.params == b.params
    }

    /// True if no reply is expected.
    public var isNotification: Bool { id == nil }

    /// Parses one line (without its newline). On failure, the error and the id to answer
    /// with (`null` when the id could not be read). A number in the params that the store
    /// could not keep as written is refused (-32602) with its path (`params.value[1]`).
    public static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<RPCRequest, RPCFailure> {
        let parsed: JSONPicked?
        do {
            // The envelope's four members picked as they are read: no array of members, no
            // String for their names; the params read flat, no dictionary.
            parsed = try JSONValue.parseMembers(line, picking: ("id", "jsonrpc", "method", "params"), flattening: 3)
        } catch {
            return .failure(RPCFailure(id: .null, error: .parseError(error.reason)))
        }
        guard let parsed else {
            return .failure(RPCFailure(id: .null, error: .invalidRequest("a request is a JSON object")))
        }
        let (id, params) = (parsed.first, parsed.fourth)
        let fields = params?.fields
        let result = validate(
            id: id?.value, idText: id.map { UnsafeBufferPointer(rebasing: line[$0.range]) },
            jsonrpc: parsed.second?.value, method: parsed.third?.value,
            params: fields == nil ? params?.value : .object([:]), members: fields)
        guard !parsed.numbersExact, case .success(let request) = result, let params,
            let (path, text) = JSONValue.firstInexactNumber(UnsafeBufferPointer(rebasing: line[params.range]))
        else { return result }
        return .failure(
            RPCFailure(
                id: request.id ?? .null,
                error: .invalidParams(
                    "params\(path) is \(text), a number assetd cannot keep exactly (send an integer within 64 bits, a number a double holds, or a string)"
                ),
                notification: request.isNotification))
    }

    /// Validates a parsed JSON value as a request.
    public static func parse(_ json: JSONValue) -> Result<RPCRequest, RPCFailure> {
        guard case .object(let o) = json else {
            return .failure(RPCFailure(id: .null, error: .invalidRequest("a request is a JSON object")))
        }
        return validate(id: o["id"], idText: nil, jsonrpc: o["jsonrpc"], method: o["method"], params: o["params"])
    }

    private static func validate(
        id raw: JSONValue?, idText: UnsafeBufferPointer<UInt8>?, jsonrpc: JSONValue?, method m: JSONValue?,
        params p: JSONValue?, members: [JSONMember]? = nil
    ) -> Result<RPCRequest, RPCFailure> {
        var id: RPCID?
        if let raw {
            switch raw {
            case .string, .int, .double, .null: id = idText.map { RPCID(raw, text: $0) } ?? RPCID(raw)
            default:
                return .failure(RPCFailure(id: .null, error: .invalidRequest("id must be a string, number or null")))
            }
        }
        let answerID = id ?? .null
        guard jsonrpc == .string("2.0") else {
            return .failure(
                RPCFailure(id: answerID, error: .invalidRequest("jsonrpc must be \"2.0\""), notification: id == nil))
        }
        guard case .string(let method)? = m, !method.isEmpty else {
            return .failure(
                RPCFailure(id: answerID, error: .invalidRequest("method must be a string"), notification: id == nil))
        }
        let params = p ?? .object([:])
        switch params {
        case .object: break
        case .null: return .success(RPCRequest(rpcID: id, method: method, params: .object([:])))
        default:
            return .failure(
                RPCFailure(id: answerID, error: .invalidParams("params must be an object"), notification: id == nil))
        }
        return .success(RPCRequest(rpcID: id, method: method, params: params, members: members))
    }

    private init(rpcID: RPCID?, method: String, params: JSONValue, members: [JSONMember]? = nil) {
        id = rpcID
        self.method = method
        storedParams = params
        paramMembers = members
    }

    /// The request as one line, newline included.
    public func line() -> [UInt8] {
        var o: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        if let id { o["id"] = id.value }
        return RPCLine.encode(.object(o))
    }
}

/// A request that could not be accepted, with the id to answer.
public struct RPCFailure: Error, Sendable, Equatable {
    /// The id for the error reply.
    public var id: RPCID
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
    public static func result(id: RPCID, _ result: JSONValue) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(128)
        self.result(id: id, result, into: &out)
        return out
    }

    /// The same reply appended to `out`.
    public static func result(id: RPCID, _ result: JSONValue, into out: inout [UInt8]) {
        beginResult(id: id, &out)
        result.write(to: &out)
        endResult(&out)
    }

    /// A success reply whose result is already JSON text (spliced, not parsed again); the
    /// keys come out in the sorted order `encode` uses.
    public static func result(id: RPCID, rawResult: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(rawResult.count + 48)
        beginResult(id: id, &out)
        out.append(contentsOf: rawResult)
        endResult(&out)
        return out
    }

    /// Appends the start of a success reply: the result's JSON text goes after it, then
    /// `endResult` (a renderer writes the result straight into the line).
    public static func beginResult(id: RPCID, _ out: inout [UInt8]) {
        if id.text == nil, case .int(let i) = id.value {
            // The usual id, in one append instead of three.
            out.appendText(maximum: 64) { c in
                c.literal(#"{"id":"#)
                c.int(i)
                c.literal(#","jsonrpc":"2.0","result":"#)
            }
            return
        }
        JSONValue.writeLiteral(#"{"id":"#, to: &out)
        id.write(to: &out)
        JSONValue.writeLiteral(#","jsonrpc":"2.0","result":"#, to: &out)
    }

    /// Ends a success reply begun with `beginResult`.
    public static func endResult(_ out: inout [UInt8]) {
        // Two bytes appended alone: `append(contentsOf:)` costs about 100 instructions whatever
        // it copies, and every reply ends here.
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "\n"))
    }

    /// An error reply, in `encode`'s sorted key order.
    public static func error(id: RPCID, _ error: RPCError) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(128)
        out.append(contentsOf: #"{"error":"#.utf8)
        error.json.write(to: &out)
        out.append(contentsOf: #","id":"#.utf8)
        id.write(to: &out)
        out.append(contentsOf: #","jsonrpc":"2.0"}"#.utf8)
        out.append(10)
        return out
    }

    /// A server event: a notification with method `event`.
    public static func event(_ params: JSONValue) -> [UInt8] {
        encode(.object(["jsonrpc": "2.0", "method": "event", "params": params]))
    }

    /// A `progress` notification for the request `id` (sent only when it asked with `progress: true`).
    public static func progress(id: RPCID, _ fields: [String: JSONValue]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(128)
        out.append(contentsOf: #"{"jsonrpc":"2.0","method":"progress","params":{"#.utf8)
        // The params' keys sorted as `encode` sorts them, the id's text among them.
        let keys = (fields.keys.filter { $0 != "id" } + ["id"]).sorted()
        for (i, key) in keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            if key == "id" { id.write(to: &out) } else { fields[key]!.write(to: &out) }  // key from fields
        }
        out.append(contentsOf: "}}\n".utf8)
        return out
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
