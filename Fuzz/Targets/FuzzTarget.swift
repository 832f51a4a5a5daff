// What each fuzzer feeds one input to, shared by the libFuzzer driver (scripts/fuzz.sh) and
// the test that replays the committed corpus. A finding is a trap: a crash, or a property
// below that does not hold.

import AssetService
import AssetStore
import ControlProtocol

/// One fuzzed surface.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A control socket line: `RPCRequest.parse`, the JSON parser and writer, id echo.
    case request
    /// `assetd.toml` text: TOMLKit and the config checks.
    case config
    /// A query clause or aggregate over a small store: the clause's text checks, the
    /// authorizer and SQLite under its limits.
    case query

    /// True when the corpus replay test runs the inputs (no ASan): nothing is skipped.
    nonisolated(unsafe) public static var replaying = false

    /// Runs one input.
    public func run(_ input: UnsafeBufferPointer<UInt8>) {
        switch self {
        case .request: FuzzTarget.request(input)
        case .config: FuzzTarget.config(input)
        case .query: FuzzTarget.query(input)
        }
    }

    static func request(_ line: UnsafeBufferPointer<UInt8>) {
        let parsed = RPCRequest.parse(line)
        guard let value = try? JSONValue.parse(line) else {
            if case .success = parsed { preconditionFailure("a request was read from text that is not JSON") }
            return
        }
        // Whatever was read writes as JSON that reads back as the same value, each number
        // included when all are exact.
        let text = value.serialized()
        guard let again = try? JSONValue.parse(text) else {
            preconditionFailure("written JSON does not parse: \(text)")
        }
        if JSONValue.firstInexactNumber(line) == nil {
            precondition(again == value, "read back as another value: \(text)")
        }
        // The line and its value agree on the request.
        let fromValue = RPCRequest.parse(value)
        switch (parsed, fromValue) {
        case (.success(let a), .success(let b)):
            precondition(
                a.method == b.method && a.params == b.params && a.id?.value == b.id?.value, "line and value disagree")
            guard let id = a.id else { return }
            // A reply carries the id as written: its text reads back as the id's value.
            let reply = RPCLine.result(id: id, .null)
            guard let echoed = try? JSONValue.parse(String(decoding: reply.dropLast(), as: UTF8.self)) else {
                preconditionFailure("the reply to an id does not parse")
            }
            if case .double(let d) = id.value, !d.isFinite { return }
            precondition(echoed["id"] == id.value, "the id came back as another value")
        case (.failure(let a), .failure(let b)):
            precondition(a.error.code == b.error.code, "line and value refuse differently")
        case (.failure(let a), .success):
            // Only the line knows a number's text.
            precondition(a.error.code == RPCError.invalidParamsCode, "the line alone refused: \(a.error)")
        case (.success, .failure(let b)):
            preconditionFailure("the value alone refused: \(b.error)")
        }
    }

    static func config(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? DaemonConfig.parse(String(decoding: bytes, as: UTF8.self), file: "/fuzz/assetd.toml")
    }

    /// A clause, or `function` NUL `clause` for an aggregate; `query` through the built-in
    /// index, or through the user index `media` when the text starts with `@`.
    static func query(_ bytes: UnsafeBufferPointer<UInt8>) {
        // A number of seven digits or more is skipped: printf('%.*c', 36249807, 'é') took 40 s
        // under ASan (0.3 s without, refused at the 64 MiB limit), which stopped the fuzzer;
        // QueryLimitTests and the corpus replay cover such values.
        var run = 0
        for b in bytes {
            run = b >= 0x30 && b <= 0x39 ? run + 1 : 0
            if run >= 7 && !FuzzTarget.replaying { return }
        }
        var text = String(decoding: bytes, as: UTF8.self)
        var index = IndexDefinition.defaultName
        if text.hasPrefix("@") {
            index = "media"
            text.removeFirst()
        }
        let store = FuzzStore.shared.store
        let parts = text.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
        let parameters: [JSONValue] = []
        if parts.count == 2 {
            _ = try? store.aggregate(
                index: index, function: String(parts[0]), clause: String(parts[1]), parameters: parameters)
        } else {
            _ = try? store.query(index: index, clause: text, parameters: parameters, include: .rows)
        }
    }
}
