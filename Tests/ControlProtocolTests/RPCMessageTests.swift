// JSON-RPC parsing and encoding (assetd(8), CONTROL PROTOCOL, Framing and Errors): each
// kind of bad input gets its error and the id to answer with; notifications are
// recognised; replies are single lines.

import Testing
import ControlProtocol
import JSON

@Suite struct RPCMessageTests {
    func parse(_ text: String) -> Result<RPCRequest, RPCFailure> {
        Array(text.utf8).withUnsafeBufferPointer { RPCRequest.parse($0) }
    }

    @Test("a well-formed request parses with its id, method and params")
    func validRequest() throws {
        let r = try parse(#"{"jsonrpc":"2.0","id":7,"method":"object.get","params":{"collection":"c","key":"k"}}"#)
            .get()
        #expect(r.id == 7)
        #expect(r.method == "object.get")
        #expect(r.params["key"] == "k")
        #expect(!r.isNotification)
    }

    @Test("a request without id is a notification; absent params are an empty object")
    func notification() throws {
        let r = try parse(#"{"jsonrpc":"2.0","method":"ping"}"#).get()
        #expect(r.isNotification)
        #expect(r.params == [:])
    }

    static let bad: [(String, Int, JSONValue)] = [
        ("{not json", -32700, nil),
        ("[1,2]", -32600, nil),
        ("42", -32600, nil),
        (#"{"id":1,"method":"ping"}"#, -32600, 1),
        (#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#, -32600, "a"),
        (#"{"jsonrpc":"2.0","id":2}"#, -32600, 2),
        (#"{"jsonrpc":"2.0","id":3,"method":5}"#, -32600, 3),
        (#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, -32600, nil),
        (#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#, -32602, 4),
        ("\u{FEFF}{}", -32700, nil),
    ]

    @Test("bad input gets its JSON-RPC error code and the id it can tell", arguments: bad)
    func badInput(text: String, code: Int, id: JSONValue) {
        guard case .failure(let f) = parse(text) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(f.error.code == code)
        #expect(f.id.value == id)
    }

    @Test("invalid UTF-8 inside a string is a parse error")
    func invalidUTF8() {
        let bytes: [UInt8] = Array(#"{"jsonrpc":"2.0","id":1,"method":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        let r = bytes.withUnsafeBufferPointer { RPCRequest.parse($0) }
        guard case .failure(let f) = r else { Issue.record("accepted"); return }
        #expect(f.error.code == -32700)
    }

    @Test("JSON nested 100,000 deep is a parse error, not a crash")
    func deepNesting() {
        let text = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        guard case .failure(let f) = parse(text) else { Issue.record("accepted"); return }
        #expect(f.error.code == -32700)
    }

    @Test("replies and events are one line each, with the request's id")
    func encoding() throws {
        let line = RPCLine.result(id: "x", ["a": 1])
        #expect(line.last == 10)
        #expect(line.dropLast().contains(10) == false)
        let json = try JSONValue.parse(String(decoding: line, as: UTF8.self))
        #expect(json == ["jsonrpc": "2.0", "id": "x", "result": ["a": 1]])
        let err = try JSONValue.parse(
            String(decoding: RPCLine.error(id: .null, .requestTooLarge(limit: 10)), as: UTF8.self))
        #expect(err["error"]?["data"]?["code"] == "request_too_large")
        #expect(err["id"] == .null)
    }

    @Test("a line parses as its parsed JSON value does, repeated names included (the last counts)")
    func lineAgreesWithValue() throws {
        let lines =
            Self.bad.map(\.0) + [
                #"{"jsonrpc":"2.0","id":7,"method":"object.get","params":{"collection":"c","key":"k"}}"#,
                #"{"jsonrpc":"2.0","method":"ping"}"#,
                #" { "id" : 1 , "jsonrpc" : "2.0" , "method" : "a" , "method" : "b" , "extra" : [1,{"x":2}] } "#,
                #"{"jsonrpc":"2.0","id":1,"id":"second","method":"m","params":null}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"params":[1]}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","params":[1],"params":{"a":1,"a":{"b":[null]}}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"deep":{"x":{"y":1.5}},"e":[]}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m"} trailing"#,
                "{}", "[]", "null", "",
                // Names picked by their bytes: escaped, non-ASCII, near misses, odd spacing, long.
                #"{"jsonrpc":"2.0","\u0069d":3,"m\u0065thod":"ping","par\u0061ms":{"k":1},"\u006aso\nrpc":1}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"object\u002eget","params":{"c\u006fllection":"c","key":"k"}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","ïd":2,"paramś":{},"méthod":"x","id\u0000":5}"#,
                #"{"jsonrpc":"2.0","i":1,"ids":2,"method":"m","param":{},"paramsx":{},"":0,"Method":"x","ID":3}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"params":{"b":2},"method":"n","id":2}"#,
                "{\t\"jsonrpc\"\r\n:\"2.0\" ,\n\"id\"\t:\t1,\"method\":\"m\",\"params\"\n:\n{\"a\" : 1}\n}",
                #"{"jsonrpc":"2.0","id":1,"method":"m","\u0070arams":[1,2],"params"  :  null}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":1},"\"id":4}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","id\"#,
                #"{"jsonrpc":"2.0","id":1,"method":"m","i\qd":1}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"c","key":""#
                    + String(repeating: "k", count: 20_000) + #""},""# + String(repeating: "n", count: 20_000)
                    + #"":1}"#,
            ]
        for line in lines {
            let fromLine = parse(line)
            guard let value = try? JSONValue.parse(line) else {
                // Not JSON: a parse error answered with a null id, whatever the line looked like.
                guard case .failure(let f) = fromLine else { Issue.record("accepted \(line)"); continue }
                #expect(f.error.code == -32700 && f.id == .null, "\(line)")
                continue
            }
            #expect(fromLine == RPCRequest.parse(value), "\(line)")
        }
        #expect(try parse(#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#).get().method == "b")
        #expect(try parse(#"{"jsonrpc":"2.0","\u0069d":1,"method":"a"}"#).get().id == 1)
        // Bytes no String holds: invalid UTF-8 or a raw control byte in a name is a parse error.
        for name: [UInt8] in [[0xFF], [0x69, 0x64, 0xC3], [0x69, 0x01, 0x64], [0xE2, 0x84, 0xAA]] {
            let line = Array(#"{"jsonrpc":"2.0","id":1,"method":"m",""#.utf8) + name + Array(#"":1}"#.utf8)
            let fromLine = line.withUnsafeBufferPointer { RPCRequest.parse($0) }
            let value = line.withUnsafeBufferPointer { try? JSONValue.parse($0) }
            if let value {
                #expect(fromLine == RPCRequest.parse(value), "\(name)")
            } else {
                guard case .failure(let f) = fromLine else { Issue.record("accepted \(name)"); continue }
                #expect(f.error.code == -32700 && f.id == .null, "\(name)")
            }
        }
    }

    @Test("params read flat keep every member in text order, nested objects whole; set params drop them")
    func paramsReadFlat() throws {
        var request = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":"one","n":{"a":1},"k":"two","z":null}}"#
        ).get()
        let members = try #require(request.paramMembers)
        #expect(members.map(\.name) == ["k", "n", "k", "z"])
        #expect(members.map(\.value) == ["one", ["a": 1], "two", nil])
        #expect(request.params == ["k": "two", "n": ["a": 1], "z": nil])
        request.params = ["x": 1]
        #expect(request.paramMembers == nil && request.params == ["x": 1])
        #expect(try parse(#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#).get().paramMembers?.isEmpty == true)
        #expect(try parse(#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).get().paramMembers == nil)
    }

    @Test("a success reply is byte for byte the generic encoding of its object, for varied ids and results")
    func resultBytes() {
        let ids: [JSONValue] = [1, "x", .null, -7, 1.5, "a\"b"]
        let results: [JSONValue] = [["commit": 12], .null, [1, "two"], ["z": ["y": true], "a": "é\n"], "s"]
        for id in ids {
            for r in results {
                #expect(
                    RPCLine.result(id: RPCID(id), r)
                        == RPCLine.encode(.object(["jsonrpc": "2.0", "id": id, "result": r])))
                #expect(
                    RPCLine.result(id: RPCID(id), rawResult: Array(r.serialized().utf8))
                        == RPCLine.result(id: RPCID(id), r))
            }
        }
    }
}
