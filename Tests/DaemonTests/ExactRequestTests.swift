// What was acknowledged comes back as sent (issue 17): edge.remove of an edge that is not there
// uses up no commit number.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct ExactRequestTests {
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
}
