// Request lines over 64 KiB are parsed on the pool, their params' dictionary built there too
// (docs/DESIGN.md, Connections): however many members a request has, the loop goes on
// answering other clients meanwhile. Debug builds of assetd hold a long line's parse, after
// its params are built, while the file ASSETD_DEBUG_HOLD_LONG_PARSE names exists.

import AssetClient
@testable import AssetDaemon
import ControlProtocol
import Foundation
import Testing

#if DEBUG
@Suite struct LongLineTests {
    /// A ping whose params have `count` members: a line of about 16 bytes a member.
    static func widePing(id: Int, members count: Int) -> String {
        let members = (0..<count).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")
        return #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{\#(members)}}"# + "\n"
    }

    @Test("a request with 60,000 params is built off the loop: another client is answered meanwhile")
    func wideParamsDoNotStallOthers() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold]
        try h.start()
        let bystander = try h.client(timeout: 60)
        try bystander.putObject("b", "k", ["n": 1])
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let wide = try RawConnection(path: h.socket)
        wide.setReceiveTimeout(60)
        let line = LongLineTests.widePing(id: 7, members: 60_000)
        #expect(line.utf8.count > 64 << 10 && line.utf8.count < 1 << 20)
        wide.send(line)
        // The parse got as far as the hold: its params are built, and it waits there.
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        // The loop is free: a ping, a point read and a put from another client are answered.
        #expect(try bystander.call("ping")["version"] != nil)
        #expect(try bystander.call("object.get", ["collection": "b", "key": "k"])["value"]?["n"] == 1)
        _ = try bystander.putObject("b", "k2", ["n": 2])
        #expect(!wide.hasBytesToRead(), "the held request was answered")
        try FileManager.default.removeItem(atPath: hold)
        let reply = wide.readLine()
        #expect(reply?["id"] == 7 && reply?["result"]?["version"] != nil, "\(String(describing: reply))")
    }
}
#endif

/// What the pool hands the loop for a long line: the hold above shows the loop free while the
/// pool works, this that the dictionary was built there, so the loop has nothing left to build.
@Suite struct LongLineParseTests {
    @Test("a long line's params come back built, but a point read's stay members")
    func paramsBuiltOnThePool() throws {
        let members = (0..<10_000).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")
        let ping = Array(#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{\#(members)}}"#.utf8)
        let request = try Session.parseLong(ping).get()
        #expect(request.paramMembers?.count == nil, "the loop would build 10,000 members' dictionary")
        #expect(request.params["p9999"] == 9999)
        let get = Array(#"{"jsonrpc":"2.0","id":8,"method":"object.get","params":{"collection":"c","key":"k"}}"#.utf8)
        #expect(try Session.parseLong(get).get().paramMembers?.count == 2, "a point read reads its members")
    }
}
