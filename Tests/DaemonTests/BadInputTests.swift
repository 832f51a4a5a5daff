// Malformed and hostile input on the control socket (assetd(8), CONTROL PROTOCOL, Framing): each
// line gets the answer Framing and Errors name, the daemon stays up, and a client connected before
// keeps its connection and its quick answers.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

/// One bad line and the error it must get.
struct BadLine: CustomTestStringConvertible, Sendable {
    var label: String
    var bytes: [UInt8]
    var code: Int
    /// The id the error must carry.
    var id: JSONValue
    var testDescription: String { label }

    init(_ label: String, _ text: String, _ code: Int, id: JSONValue = .null) {
        self.init(label, Array(text.utf8), code, id: id)
    }

    init(_ label: String, _ bytes: [UInt8], _ code: Int, id: JSONValue = .null) {
        self.label = label
        self.bytes = bytes
        self.code = code
        self.id = id
    }
}

@Suite("bad input") struct BadInputTests {
    static let badLines: [BadLine] = [
        BadLine("invalid JSON", #"{"jsonrpc":"2.0","id":1,"method":"ping""#, Code.parse),
        BadLine("plain words", "hello daemon", Code.parse),
        BadLine("an array", "[1,2,3]", Code.invalidRequest),
        BadLine("a number", "42", Code.invalidRequest),
        BadLine("a string", #""ping""#, Code.invalidRequest),
        BadLine("null", "null", Code.invalidRequest),
        BadLine("no jsonrpc", #"{"id":5,"method":"ping"}"#, Code.invalidRequest, id: 5),
        BadLine("jsonrpc 1.0", #"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#, Code.invalidRequest, id: "v1"),
        BadLine("no method", #"{"jsonrpc":"2.0","id":6}"#, Code.invalidRequest, id: 6),
        BadLine("method a number", #"{"jsonrpc":"2.0","id":7,"method":7}"#, Code.invalidRequest, id: 7),
        BadLine("id an object", #"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Code.invalidRequest),
        BadLine(
            "an unknown method", #"{"jsonrpc":"2.0","id":8,"method":"object.explode"}"#, Code.methodNotFound, id: 8),
        BadLine(
            "params an array", #"{"jsonrpc":"2.0","id":9,"method":"object.get","params":[1]}"#, Code.invalidParams,
            id: 9),
        BadLine(
            "a param of the wrong type",
            #"{"jsonrpc":"2.0","id":10,"method":"object.get","params":{"collection":1,"key":"k"}}"#,
            Code.invalidParams, id: 10),
        BadLine(
            "invalid UTF-8 in a string",
            Array(#"{"jsonrpc":"2.0","id":11,"method":"ping","params":{"s":""#.utf8) + [0xFF, 0xFE, 0xC0]
                + Array(#""}}"#.utf8),
            Code.parse),
        BadLine("invalid UTF-8 outside strings", [0xC3, 0x28, 0xA0, 0xA1], Code.parse),
        BadLine(
            "arrays nested 100,000 deep",
            String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000), Code.parse),
        BadLine(
            "objects nested 100,000 deep",
            String(repeating: #"{"a":"#, count: 100_000) + String(repeating: "}", count: 100_000),
            Code.parse),
        BadLine("a NUL byte", [0x7B, 0x00, 0x7D], Code.parse),
    ]

    @Test(
        "a bad line gets its error, the connection stays open, and a client connected before is unaffected",
        arguments: badLines)
    func badLine(_ bad: BadLine) throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let raw = try RawConnection(path: h.socket)
        raw.send(bad.bytes + [10])
        let reply = try #require(raw.readLine(), "no reply to \(bad.label)")
        #expect(reply["jsonrpc"] == "2.0")
        #expect(reply["error"]?["code"] == .int(Int64(bad.code)), "\(reply.serialized())")
        #expect(reply["error"]?["message"]?.stringValue?.isEmpty == false)
        #expect(reply["id"] == bad.id, "\(reply.serialized())")
        raw.send(#"{"jsonrpc":"2.0","id":"next","method":"ping"}"# + "\n")
        #expect(raw.readLine()?["id"] == "next", "the connection stays open")
        #expect(try bystander.call("ping")["version"] != nil, "the bystander's connection still works")
        #expect(h.isRunning)
    }

    @Test("a line over control.max_request_bytes gets request_too_large and the connection is closed")
    func requestTooLarge() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = 4096")
        let bystander = try h.client()
        try bystander.call("ping")

        let exact = try RawConnection(path: h.socket)
        exact.send(paddedPing(id: 1, length: 4096) + "\n")
        #expect(exact.readLine()?["id"] == 1, "a line of exactly the limit is accepted")

        let raw = try RawConnection(path: h.socket)
        raw.send(paddedPing(id: 2, length: 4097) + "\n")
        let reply = try #require(raw.readLine())
        #expect(reply["error"]?["code"] == .int(Int64(Code.invalidRequest)), "\(reply.serialized())")
        #expect(reply["error"]?["data"]?["code"] == "request_too_large")
        #expect(raw.isClosedByPeer())

        let endless = try RawConnection(path: h.socket)
        endless.send(String(repeating: "x", count: 20_000))
        #expect(
            endless.readLine()?["error"]?["data"]?["code"] == "request_too_large", "a long line without newline too")
        #expect(endless.isClosedByPeer())

        #expect(try bystander.call("ping")["version"] != nil)
        exact.send(#"{"jsonrpc":"2.0","id":3,"method":"ping"}"# + "\n")
        #expect(exact.readLine()?["id"] == 3)
    }

    @Test("a too-long line after pipelined requests: their replies come first, in order, then request_too_large")
    func tooLongAfterPipelined() throws {
        let h = try DaemonHarness(controlSection: "max_request_bytes = 4096")
        let raw = try RawConnection(path: h.socket)
        let put = #"{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"tl","key":"k","value":{}}}"#
        let ping = #"{"jsonrpc":"2.0","id":2,"method":"ping"}"#
        raw.send(put + "\n" + ping + "\n" + String(repeating: "x", count: 5000) + "\n")
        var ids: [JSONValue] = []
        while let line = raw.readLine() { ids.append(line["id"] ?? .null) }
        #expect(ids == [1, 2, .null], "replies in request order; got ids \(ids)")
        if !ids.contains(1) {
            #expect(try h.client().getObject("tl", "k") == .null, "the put was committed but never answered")
        }
    }

    /// A ping request of exactly `length` bytes.
    private func paddedPing(id: Int, length: Int) -> String {
        let head = #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"pad":""#
        let tail = #""}}"#
        return head + String(repeating: "p", count: length - head.utf8.count - tail.utf8.count) + tail
    }

    @Test("1,000 pipelined requests get 1,000 replies in request order, each seeing the ones before")
    func pipelining() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let raw = try RawConnection(path: h.socket)
        var batch = ""
        for i in 1...1000 {
            if i % 2 == 1 {
                batch +=
                    #"{"jsonrpc":"2.0","id":\#(i),"method":"object.put","params":{"collection":"p","key":"k\#(i)","value":{"i":\#(i)}}}"#
                    + "\n"
            } else {
                batch +=
                    #"{"jsonrpc":"2.0","id":\#(i),"method":"object.get","params":{"collection":"p","key":"k\#(i - 1)"}}"#
                    + "\n"
            }
        }
        let writer = onThread { [raw, batch] in raw.send(batch) }
        var ids = [Int64]()
        var sawOwnWrites = true
        for i in 1...1000 {
            guard let reply = raw.readLine() else { break }
            ids.append(reply["id"]?.intValue ?? -1)
            if i % 2 == 0, reply["result"]?["value"]?["i"] != .int(Int64(i - 1)) { sawOwnWrites = false }
        }
        writer.wait()
        #expect(ids == (1...1000).map(Int64.init))
        #expect(sawOwnWrites, "each get sees the put just before it")
        #expect(try bystander.call("ping")["version"] != nil)
    }

    @Test("a notification is executed and never answered, not even with an error")
    func notification() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let raw = try RawConnection(path: h.socket)
        raw.send(
            #"{"jsonrpc":"2.0","method":"object.put","params":{"collection":"n","key":"k","value":{"v":1}}}"# + "\n")
        raw.send(#"{"jsonrpc":"2.0","method":"object.nonesuch"}"# + "\n")
        raw.send(#"{"jsonrpc":"2.0","method":"object.get","params":{"collection":5}}"# + "\n")
        raw.send(#"{"jsonrpc":"2.0","method":"object.delete","params":{"collection":"n","key":"missing"}}"# + "\n")
        raw.send(#"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"n","key":"k"}}"# + "\n")
        let reply = try #require(raw.readLine())
        #expect(reply["id"] == 1, "the next line is the reply to the request: \(reply.serialized())")
        #expect(reply["result"]?["value"] == ["v": 1], "the notification was executed")
        #expect(try bystander.call("ping")["version"] != nil)
    }

    @Test("empty lines, CRLF line ends and empty CRLF lines are ignored")
    func blankLines() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let raw = try RawConnection(path: h.socket)
        raw.send("\n\n\r\n" + #"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\r\n\n")
        raw.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n")
        #expect(raw.readLine()?["id"] == 1)
        #expect(raw.readLine()?["id"] == 2, "nothing was answered in between")
        #expect(try bystander.call("ping")["version"] != nil)
    }

    @Test("lines of only spaces and tabs are blank lines and are ignored")
    func whitespaceLines() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        let raw = try RawConnection(path: h.socket)
        raw.send("   \n\t\n \t \r\n")
        raw.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        let reply = raw.readLine()
        #expect(reply?["id"] == 1, "the first reply is the ping's: \(reply?.serialized() ?? "none")")
        #expect(try bystander.call("ping")["version"] != nil)
    }

    @Test("past control.max_connections a connection gets an error line and is closed; the others go on")
    func maxConnections() throws {
        let h = try DaemonHarness(controlSection: "max_connections = 2")
        let first = try h.client()
        try first.call("ping")
        let second = try RawConnection(path: h.socket)
        second.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        #expect(second.readLine()?["id"] == 1)
        let third = try RawConnection(path: h.socket)
        let refusal = third.readLine()
        #expect(refusal?["error"]?["code"]?.intValue != nil, "an error line: \(refusal?.serialized() ?? "none")")
        #expect(third.isClosedByPeer())
        #expect(try first.call("ping")["version"] != nil)
        withExtendedLifetime(second) {}
    }

    @Test("a half-written line then a disconnect leaves the daemon serving")
    func halfLine() throws {
        let h = try DaemonHarness()
        let bystander = try h.client()
        try bystander.call("ping")
        for _ in 0..<5 {
            let raw = try RawConnection(path: h.socket)
            raw.send(#"{"jsonrpc":"2.0","id":1,"method":"object.put","params":{"collection":"h","ke"#)
        }
        let closing = try RawConnection(path: h.socket)
        closing.send(#"{"jsonrpc":"2.0","id":1,"meth"#)
        closing.shutdownWrite()
        #expect(closing.readLine() == nil, "no reply to an unfinished line")
        #expect(try bystander.call("ping")["version"] != nil)
        #expect(eventually { (try? bystander.call("stats")["connections"]) == 1 }, "the dead connections are gone")
        #expect(try bystander.call("object.list", ["collection": "h"])["keys"] == [])
    }

    @Test("a client that pipelines requests then half-closes gets every reply before the daemon closes")
    func halfCloseAfterPipelining() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        // Nothing is read until the end is sent: about 1 MB of replies, more than the socket
        // buffer holds and less than the output bound, waits in the daemon when the end arrives.
        let count = 20_000
        raw.send((0..<count).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"ping"}"# + "\n" }.joined())
        raw.shutdownWrite()
        var ids = [Int64]()
        while let reply = raw.readLine() { ids.append(reply["id"]?.intValue ?? -1) }
        #expect(ids.count == count, "replies before the daemon closed: \(ids.count) of \(count)")
        #expect(ids.elementsEqual(0..<Int64(count)), "in order")
    }

    @Test("a client that never reads its replies does not stall others: their pings and puts are answered meanwhile")
    func nonReader() throws {
        let h = try DaemonHarness()
        let bystander = try h.client(timeout: 60)
        let big = String(repeating: "b", count: 64 * 1024)
        try bystander.putObject("big", "k", ["blob": .string(big)])
        let hog = try RawConnection(path: h.socket)
        // Ask for far more reply bytes (190 MiB) than any buffer holds, until the hog's socket is full.
        hog.sendGetsWithoutReading("big", "k")
        // The hog has read nothing, so its replies are all outstanding while these are answered
        // (a daemon that waited on the hog's socket would time these calls out).
        for i in 0..<20 {
            #expect(try bystander.call("ping")["version"] != nil)
            if i % 5 == 0 { try bystander.putObject("other", "k\(i)") }
        }
        #expect(try bystander.getObject("other", "k15") != .null)
        let newcomer = try h.client(timeout: 60)
        #expect(try newcomer.call("ping")["version"] != nil)
        withExtendedLifetime(hog) {}
    }
}
