// Each method with a missing or mistyped param answers -32602 (assetd(8), CONTROL
// PROTOCOL, Errors), changes nothing, and leaves the connection usable. One daemon per
// method; its cases run on one connection.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

/// A method and the params that must be refused, each with why.
struct InvalidParamsCase: CustomTestStringConvertible, Sendable {
    var method: String
    /// (what is wrong, params as JSON text).
    var cases: [(String, String)]
    var testDescription: String { method }
}

@Suite("invalid params") struct InvalidParamsTests {
    static let table: [InvalidParamsCase] = [
        InvalidParamsCase(method: "ping", cases: [("params an array", "[1]")]),
        InvalidParamsCase(
            method: "object.put",
            cases: [
                ("value missing", #"{"collection":"c","key":"k"}"#),
                ("collection missing", #"{"key":"k","value":{}}"#),
                ("key a number", #"{"collection":"c","key":5,"value":{}}"#),
                ("collection an object", #"{"collection":{},"key":"k","value":{}}"#),
                ("owner a number", #"{"collection":"c","key":"k","value":{},"owner":7}"#),
                ("key empty", #"{"collection":"c","key":"","value":{}}"#),
                ("collection empty", #"{"collection":"","key":"k","value":{}}"#),
                (
                    "key longer than 1,024 bytes",
                    #"{"collection":"c","key":"\#(String(repeating: "k", count: 1025))","value":{}}"#
                ),
                ("params a string", #""c/k""#),
            ]),
        InvalidParamsCase(
            method: "object.get",
            cases: [
                ("key missing", #"{"collection":"c"}"#),
                ("collection a number", #"{"collection":1,"key":"k"}"#),
                ("touch a string", #"{"collection":"c","key":"k","touch":"yes"}"#),
            ]),
        InvalidParamsCase(
            method: "object.delete",
            cases: [
                ("collection missing", #"{"key":"k"}"#),
                ("key an array", #"{"collection":"c","key":["k"]}"#),
            ]),
        InvalidParamsCase(
            method: "object.touch",
            cases: [
                ("key a number", #"{"collection":"c","key":3}"#),
                ("both missing", #"{}"#),
            ]),
        InvalidParamsCase(
            method: "object.list",
            cases: [
                ("collection missing", #"{}"#),
                ("limit a string", #"{"collection":"c","limit":"10"}"#),
                ("limit zero", #"{"collection":"c","limit":0}"#),
                ("limit a fraction", #"{"collection":"c","limit":1.5}"#),
                ("after a number", #"{"collection":"c","after":5}"#),
            ]),
        InvalidParamsCase(
            method: "edge.add",
            cases: [
                (
                    "name missing",
                    #"{"source":{"collection":"c","key":"s"},"destination":{"collection":"c","key":"d"},"rules":[]}"#
                ),
                (
                    "source a string",
                    #"{"name":"e","source":"c/s","destination":{"collection":"c","key":"d"},"rules":[]}"#
                ),
                ("destination missing", #"{"name":"e","source":{"collection":"c","key":"s"},"rules":[]}"#),
                (
                    "destination file a number",
                    #"{"name":"e","source":{"collection":"c","key":"s"},"destination":{"file":5},"rules":[]}"#
                ),
                (
                    "name longer than 1024 bytes",
                    #"{"name":""# + String(repeating: "n", count: 1025)
                        + #"","source":{"collection":"c","key":"d"},"destination":{"collection":"c","key":"d"},"rules":[]}"#
                ),
                (
                    "rules an object",
                    #"{"name":"e","source":{"collection":"c","key":"s"},"destination":{"collection":"c","key":"d"},"rules":{"a":1}}"#
                ),
            ]),
        InvalidParamsCase(
            method: "edge.remove",
            cases: [
                (
                    "name missing",
                    #"{"source":{"collection":"c","key":"s"},"destination":{"collection":"c","key":"d"}}"#
                ),
                (
                    "reason unknown",
                    #"{"name":"e","source":{"collection":"c","key":"s"},"destination":{"collection":"c","key":"d"},"reason":"bored"}"#
                ),
                (
                    "source without key",
                    #"{"name":"e","source":{"collection":"c"},"destination":{"collection":"c","key":"d"}}"#
                ),
            ]),
        InvalidParamsCase(
            method: "edge.find",
            cases: [
                ("name a number", #"{"name":5}"#),
                ("source a number", #"{"source":5}"#),
                ("limit zero", #"{"limit":0}"#),
                ("limit over 100000", #"{"limit":100001}"#),
                ("after a string", #"{"after":"5"}"#),
                ("after negative", #"{"after":-1}"#),
            ]),
        InvalidParamsCase(
            method: "edge.count",
            cases: [
                ("destination a string", #"{"destination":"c/d"}"#)
            ]),
        InvalidParamsCase(
            method: "transact",
            cases: [
                ("ops missing", #"{}"#),
                ("ops a string", #"{"ops":"x"}"#),
                ("an op without method", #"{"ops":[{"params":{}}]}"#),
                ("an op that is not an object or edge method", #"{"ops":[{"method":"shutdown"}]}"#),
                ("an op's params a number", #"{"ops":[{"method":"object.put","params":5}]}"#),
                (
                    "an op's own params wrong",
                    #"{"ops":[{"method":"object.put","params":{"collection":"c","key":"k"}}]}"#
                ),
            ]),
        InvalidParamsCase(
            method: "template.set",
            cases: [
                ("edges missing", #"{"collection":"c"}"#),
                ("collection missing", #"{"edges":[]}"#),
                ("edges an object", #"{"collection":"c","edges":{}}"#),
                ("a template without field", #"{"collection":"c","edges":[{"name":"n","to":"d","rules":[]}]}"#),
            ]),
        InvalidParamsCase(
            method: "template.get",
            cases: [
                ("collection missing", #"{}"#),
                ("collection a number", #"{"collection":1}"#),
            ]),
        InvalidParamsCase(
            method: "index.define",
            cases: [
                ("name missing", #"{"version":"1","columns":[]}"#),
                ("columns missing", #"{"name":"i","version":"1"}"#),
                (
                    "a column type unknown",
                    #"{"name":"i","version":"1","columns":[{"name":"a","type":"blob","path":"$.a"}]}"#
                ),
            ]),
        InvalidParamsCase(method: "index.list", cases: [("params an array", "[]")]),
        InvalidParamsCase(
            method: "index.query",
            cases: [
                ("where a number", #"{"where":5}"#),
                ("include unknown", #"{"where":"","include":"everything"}"#),
                ("params not an array", #"{"where":"WHERE key = ?","params":"k"}"#),
                ("index a number", #"{"index":1,"where":""}"#),
            ]),
        InvalidParamsCase(
            method: "index.aggregate",
            cases: [
                ("function missing", #"{}"#),
                ("group_by a string", #"{"function":"COUNT(*)","group_by":"owner"}"#),
                ("params an object", #"{"function":"COUNT(*)","where":"WHERE key = ?","params":{}}"#),
            ]),
        InvalidParamsCase(
            method: "file.get",
            cases: [
                ("path missing", #"{}"#),
                ("path a number", #"{"path":5}"#),
            ]),
        InvalidParamsCase(
            method: "watch",
            cases: [
                ("types with an unknown type", #"{"types":["object.exploded"]}"#),
                ("collections a string", #"{"collections":"c"}"#),
            ]),
        InvalidParamsCase(method: "unwatch", cases: [("params a number", "3")]),
        InvalidParamsCase(method: "stats", cases: [("params an array", "[1]")]),
        InvalidParamsCase(method: "sweep", cases: [("params a string", #""now""#)]),
        InvalidParamsCase(
            method: "pending",
            cases: [
                ("limit a string", #"{"limit":"5"}"#),
                ("limit negative", #"{"limit":-1}"#),
            ]),
        InvalidParamsCase(
            method: "pending.forget",
            cases: [
                ("paths missing", "{}"),
                ("paths empty", #"{"paths":[]}"#),
                ("paths a string", #"{"paths":"/tmp/x"}"#),
                ("a path a number", #"{"paths":[7]}"#),
            ]),
        InvalidParamsCase(method: "shutdown", cases: [("params an array", "[]")]),
    ]

    @Test("a missing or mistyped param is -32602, changes nothing and the connection goes on", arguments: table)
    func invalidParams(_ item: InvalidParamsCase) throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        let c = try h.client()
        try c.putObject("c", "s")
        try c.putObject("c", "d")
        let before = try c.call("stats")
        for (i, (why, params)) in item.cases.enumerated() {
            raw.send(#"{"jsonrpc":"2.0","id":\#(i + 1),"method":"\#(item.method)","params":\#(params)}"# + "\n")
            let reply = raw.readLine()
            #expect(reply?["id"] == .int(Int64(i + 1)), "\(item.method), \(why): \(reply?.serialized() ?? "no reply")")
            #expect(
                reply?["error"]?["code"] == .int(Int64(Code.invalidParams)),
                "\(item.method), \(why): \(reply?.serialized() ?? "no reply")")
            #expect(reply?["result"] == nil, "\(item.method), \(why)")
        }
        raw.send(#"{"jsonrpc":"2.0","id":"after","method":"ping"}"# + "\n")
        #expect(raw.readLine()?["id"] == "after")
        let after = try c.call("stats")
        #expect(after["objects"] == before["objects"])
        #expect(after["commit"] == before["commit"])
        #expect(h.isRunning)
    }

    @Test("a key, collection or owner with a NUL byte is refused (-32602): it never aliases the prefix's object")
    func nulInKey() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("nul", "a", ["v": 1])
        for params: JSONValue in [
            ["collection": "nul", "key": "a\u{0}zz"], ["collection": "nul", "key": "a\u{0}zz", "touch": true],
            ["collection": "nul\u{0}other", "key": "a"],
        ] {
            expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("object.get", params) }
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.put", ["collection": "nul", "key": "a\u{0}zz", "value": ["v": 2]])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.put", ["collection": "nul", "key": "b", "value": ["owner": "x\u{0}y"]])
        }
        #expect(try c.getObject("nul", "a")["value"] == ["v": 1])
        #expect(try c.call("object.list", ["collection": "nul"])["keys"] == ["a"])
    }
}
