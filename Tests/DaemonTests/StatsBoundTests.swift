// `stats` is bounded by control.max_reply_bytes like other replies: the owners, the only part
// that grows with the store, are cut to fit and the number left out is said (assetd(8),
// CONTROL PROTOCOL, stats). The owners are rendered off the loop and written with the
// daemon's figures as one object in key order.

import AssetClient
import Foundation
import JSON
import Testing

@Suite struct StatsBoundTests {
    @Test("stats with more owners than max_reply_bytes holds cuts them and says how many")
    func ownersCutToTheBound() throws {
        let limit = 8192
        let h = try DaemonHarness(controlSection: "max_reply_bytes = \(limit)")
        let c = try h.client()
        let file = try h.makeFile("shared", size: 100)
        let names = (0..<40).map { "owner-\($0)-" + String(repeating: "x", count: 120) }
        for (i, name) in names.enumerated() {
            try c.putObject("s", "k\(i)", ["file": .string(file)], owner: name)
        }
        let raw = try RawConnection(path: h.socket)
        raw.send(#"{"jsonrpc":"2.0","id":1,"method":"stats"}"# + "\n")
        let line = try #require(raw.readRawLine())
        #expect(line.count + 1 <= limit, "the reply fits max_reply_bytes")
        let reply = try JSONValue.parse(String(decoding: line, as: UTF8.self))
        #expect(Array(reply.serialized().utf8) == line, "one object, keys in order")
        let s = try #require(reply["result"])
        let owners = try #require(s["owners"]?.arrayValue)
        let omitted = try #require(s["owners_omitted"]?.intValue)
        #expect(!owners.isEmpty && omitted > 0)
        #expect(owners.count + Int(omitted) == names.count)
        #expect(owners.compactMap { $0["owner"]?.stringValue } == Array(names.sorted().prefix(owners.count)))
        #expect(s["bytes_per_owner"]?.objectValue?.count == owners.count)
        #expect(s["objects"] == 40)
        // At least this connection and the reading one (an earlier probe's end may be late).
        #expect((s["connections"]?.intValue ?? 0) >= 2, "the daemon's figures are there too")
    }

    @Test("stats under max_reply_bytes has every owner and no owners_omitted")
    func ownersWhole() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let file = try h.makeFile("shared", size: 100)
        for i in 0..<40 { try c.putObject("s", "k\(i)", ["file": .string(file)], owner: "o\(i)") }
        let s = try c.call("stats")
        #expect(s["owners"]?.arrayValue?.count == 40)
        #expect(s["bytes_per_owner"]?.objectValue?.count == 40)
        #expect(s["owners_omitted"] == nil)
    }
}
