// What was acknowledged comes back as sent (assetd(8)): over the socket, a number a value cannot
// keep is refused naming where it is and stores nothing, an id comes back as written, and
// edge.remove of an edge that is not there uses up no commit number.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct ExactRequestTests {
    @Test(
        "a value holding a number it cannot keep is invalid_params naming where, and nothing is stored",
        arguments: [
            ("1e400", "params.value is 1e400"),
            ("[1e400,-1e400,5]", "params.value[0] is 1e400"),
            ("18446744073709551617", "params.value is 18446744073709551617"),
        ])
    func numberRefused(_ value: String, _ message: String) throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        raw.send(
            #"{"jsonrpc":"2.0","id":5,"method":"object.put","params":{"collection":"c","key":"k","value":"# + value
                + "}}\n")
        let reply = try #require(raw.readLine())
        #expect(reply["error"]?["code"] == .int(-32602), "\(reply.serialized())")
        #expect(reply["error"]?["data"]?["code"] == "invalid_params")
        #expect(reply["error"]?["message"]?.stringValue?.contains(message) == true, "\(reply.serialized())")
        #expect(reply["id"] == 5)
        #expect(try h.client().getObject("c", "k") == .null)
    }

    @Test("an id is answered as the client wrote it, 1e400 included")
    func idAsWritten() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        for id in ["1e400", "1.50", "-0", "18446744073709551617", "12"] {
            raw.send(#"{"jsonrpc":"2.0","id":"# + id + #","method":"ping"}"# + "\n")
            let line = readRawLine(raw.fd)
            #expect(line.hasPrefix(#"{"id":"# + id + ","), "\(line)")
            raw.send(#"{"jsonrpc":"2.0","id":"# + id + #","method":"no.such"}"# + "\n")
            let error = readRawLine(raw.fd)
            #expect(error.contains(#","id":"# + id + ","), "\(error)")
        }
    }

    @Test("edge.remove of an edge that is not there commits nothing: removed false and the current commit")
    func edgeRemoveNoCommit() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("r", "s")
        let last = try c.putObject("r", "d")
        let edge: JSONValue = ["name": "own", "source": ref("r", "s"), "destination": ref("r", "d")]
        for reason in ["edge", "sourceDeleted", "destinationDeleted"] {
            var p = edge.objectValue!  // a literal object
            p["reason"] = .string(reason)
            let r = try c.call("edge.remove", .object(p))
            #expect(r == ["removed": false, "commit": .int(last)], "\(reason): \(r.serialized())")
        }
        #expect(try c.putObject("r", "e") == last + 1, "no commit number was used up")
        try c.addEdge("own", from: ref("r", "s"), to: ref("r", "d"), rules: [])
        let removed = try c.call("edge.remove", edge)
        #expect(removed["removed"] == true)
        #expect(removed["commit"] == .int(last + 3))
    }

    /// One reply line as the daemon wrote it (RawConnection.readLine parses it).
    func readRawLine(_ fd: Int32) -> String {
        var bytes = [UInt8]()
        var b: UInt8 = 0
        while recv(fd, &b, 1, 0) == 1, b != 10 { bytes.append(b) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
