// Numbers in requests (RPCMessage.swift): a number in params that a value cannot keep is
// refused with invalid_params naming where it is, and an id comes back in the reply as the
// client wrote it, whatever number it is.

import ControlProtocol
import JSON
import Testing

@Suite struct RequestNumberTests {
    func parse(_ text: String) -> Result<RPCRequest, RPCFailure> {
        Array(text.utf8).withUnsafeBufferPointer { RPCRequest.parse($0) }
    }

    static let refused: [(String, String)] = [
        (#""value":1e400"#, "params.value is 1e400"),
        (#""value":[1e400,-1e400,5]"#, "params.value[0] is 1e400"),
        (#""value":[5,-1e400]"#, "params.value[1] is -1e400"),
        (#""value":18446744073709551617"#, "params.value is 18446744073709551617"),
        (#""value":{"a":{"b c":[1,2,1e-400]}}"#, #"params.value.a["b c"][2] is 1e-400"#),
        (#""metadata":{"n":-99999999999999999999}"#, "params.metadata.n is -99999999999999999999"),
    ]

    @Test("a number a value cannot keep is invalid_params naming its path, answered with the id", arguments: refused)
    func refusedNumber(_ member: String, _ message: String) {
        let line =
            #"{"jsonrpc":"2.0","id":3,"method":"object.put","params":{"collection":"c","key":"k","#
            + member + "}}"
        guard case .failure(let f) = parse(line) else {
            Issue.record("accepted \(line)")
            return
        }
        #expect(f.error.code == -32602)
        #expect(f.error.stableCode == "invalid_params")
        #expect(f.error.message.contains(message), "\(f.error.message)")
        #expect(f.id == 3)
        #expect(!f.notification)
    }

    @Test("numbers a value keeps pass, and a notification with one it cannot keep gets no reply")
    func keptNumbers() throws {
        let r = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"value":[1e2,0.1,-0,9223372036854775807,5e-324,"1e400"]}}"#
        ).get()
        #expect(r.params["value"] == [100.0, 0.1, 0, .int(Int64.max), .double(.leastNonzeroMagnitude), "1e400"])
        guard case .failure(let f) = parse(#"{"jsonrpc":"2.0","method":"object.put","params":{"value":1e999}}"#) else {
            Issue.record("accepted")
            return
        }
        #expect(f.notification)
    }

    @Test("a number only in the id or outside params is not refused")
    func numberOutsideParams() throws {
        #expect(try parse(#"{"jsonrpc":"2.0","id":1e400,"method":"ping","x":1e400}"#).get().method == "ping")
    }

    static let ids = [
        "1e400", "-1e400", "1.50", "-0", "18446744073709551617", "1E2", "0.1", "-2.5e-3", "7", "-7", "0",
        "9223372036854775807", #""x""#, #""\u00e9""#, "null",
    ]

    @Test("an id comes back in the reply, error and progress as the client wrote it", arguments: ids)
    func idEchoed(_ id: String) throws {
        let r = try parse(#"{"jsonrpc":"2.0","id":"# + id + #","method":"ping"}"#).get()
        let rid = try #require(r.id)
        let written = Array(#""id":"#.utf8) + Array(id.utf8)
        #expect(contains(RPCLine.result(id: rid, .null), written + [UInt8(ascii: ",")]))
        #expect(contains(RPCLine.result(id: rid, rawResult: Array("{}".utf8)), written + [UInt8(ascii: ",")]))
        #expect(contains(RPCLine.error(id: rid, .invalidParams("x")), written + [UInt8(ascii: ",")]))
        #expect(
            contains(RPCLine.progress(id: rid, ["done": 1, "phase": "p", "total": 2]), written + [UInt8(ascii: ",")]))
        // The failure of a request with that id carries it too.
        guard case .failure(let f) = parse(#"{"jsonrpc":"2.0","id":"# + id + #"}"#) else {
            Issue.record("accepted"); return
        }
        #expect(contains(RPCLine.error(id: f.id, f.error), written + [UInt8(ascii: ",")]))
    }

    @Test("replies built with the id's text are the generic encoding when the text is the usual one")
    func usualIDsUnchanged() throws {
        for id in ["7", #""x""#, "null", "-3"] {
            let r = try parse(#"{"jsonrpc":"2.0","id":"# + id + #","method":"ping"}"#).get()
            let value = try JSONValue.parse(id)
            #expect(
                RPCLine.error(id: r.id!, .invalidParams("x"))
                    == RPCLine.encode(
                        .object(["jsonrpc": "2.0", "id": value, "error": RPCError.invalidParams("x").json])))
            #expect(
                RPCLine.progress(id: r.id!, ["done": 1, "phase": "p"])
                    == RPCLine.encode(
                        .object([
                            "jsonrpc": "2.0", "method": "progress", "params": ["done": 1, "phase": "p", "id": value],
                        ])))
        }
    }

    func contains(_ line: [UInt8], _ part: [UInt8]) -> Bool {
        guard line.count >= part.count else { return false }
        return (0...(line.count - part.count)).contains { line[$0..<($0 + part.count)].elementsEqual(part) }
    }
}
