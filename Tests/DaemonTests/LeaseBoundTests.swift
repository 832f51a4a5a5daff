// What leases hold is bounded (assetd(8), LIMITS): a connection's live leases at most
// control.max_lease_entries_per_connection objects and files, all connections' at most
// control.total_lease_entries; a lease past either is refused whole with lease_limit.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct LeaseBoundTests {
    /// `n` objects to lease, named `prefix0`…
    func objects(_ n: Int, _ prefix: String = "k") -> JSONValue {
        .array((0..<n).map { ref("c", "\(prefix)\($0)") })
    }

    /// The error `lease.acquire` with `params` is refused with, nil if it is granted.
    func refusal(_ c: ControlClient, _ params: JSONValue) throws -> RPCError? {
        do {
            _ = try c.call("lease.acquire", params)
            return nil
        } catch ClientError.rpc(let e) {
            return e
        }
    }

    @Test("a connection's leases are taken up to the bound; the one past it is refused whole")
    func perConnection() throws {
        let h = try DaemonHarness(controlSection: "max_lease_entries_per_connection = 5")
        let file = try h.makeFile("a.bin")
        let c = try h.client()
        _ = try c.call("lease.acquire", ["objects": objects(3), "files": [.string(file)], "ttl": 600])
        let refused = try #require(try refusal(c, ["objects": objects(2, "x"), "ttl": 600]))
        #expect(refused.code == -32000 && refused.stableCode == "lease_limit")
        #expect(refused.message.contains("control.max_lease_entries_per_connection = 5"), "\(refused.message)")
        #expect(refused.data?["detail"] == ["limit": "control.max_lease_entries_per_connection", "value": 5])
        // Nothing of the refused lease is kept: its objects are not leased, and the last entry fits.
        let listed = try c.call("lease.list")["leases"]?.arrayValue ?? []
        #expect(listed.count == 1)
        _ = try c.call("lease.acquire", ["objects": objects(1, "y"), "ttl": 600])
        #expect(try refusal(c, ["objects": objects(1, "z"), "ttl": 600])?.stableCode == "lease_limit")
    }

    @Test("releasing a lease frees its entries for the connection")
    func releaseFrees() throws {
        let h = try DaemonHarness(controlSection: "max_lease_entries_per_connection = 4")
        let c = try h.client()
        let id = try #require(try c.call("lease.acquire", ["objects": objects(4), "ttl": 600])["lease"])
        #expect(try refusal(c, ["objects": objects(1, "x"), "ttl": 600])?.stableCode == "lease_limit")
        #expect(try c.call("lease.release", ["lease": id])["released"] == true)
        _ = try c.call("lease.acquire", ["objects": objects(4, "x"), "ttl": 600])
    }

    @Test("a closed connection's leases free room in the total for another")
    func closedConnectionFrees() throws {
        let h = try DaemonHarness(controlSection: "max_lease_entries_per_connection = 4\ntotal_lease_entries = 4")
        let first = try h.client()
        _ = try first.call("lease.acquire", ["objects": objects(4), "ttl": 600])
        let second = try h.client()
        let refused = try #require(try refusal(second, ["objects": objects(1, "x"), "ttl": 600]))
        #expect(refused.stableCode == "lease_limit" && refused.message.contains("control.total_lease_entries = 4"))
        first.close()
        // The daemon ends the closed connection's leases on its loop: ask until it has.
        #expect(try eventually { try second.call("lease.list")["leases"] == [] })
        _ = try second.call("lease.acquire", ["objects": objects(4, "x"), "ttl": 600])
    }

    @Test("the total bound counts the leases of every connection")
    func totalAcrossConnections() throws {
        let h = try DaemonHarness(controlSection: "max_lease_entries_per_connection = 4\ntotal_lease_entries = 6")
        let file = try h.makeFile("a.bin")
        let a = try h.client()
        let b = try h.client()
        _ = try a.call("lease.acquire", ["objects": objects(3), "ttl": 600])
        _ = try b.call("lease.acquire", ["files": [.string(file)], "objects": objects(1, "x"), "ttl": 600])
        let refused = try #require(try refusal(b, ["objects": objects(2, "y"), "ttl": 600]))
        #expect(refused.data?["detail"]?["limit"] == "control.total_lease_entries")
        _ = try b.call("lease.acquire", ["objects": objects(1, "y"), "ttl": 600])
        #expect(try refusal(a, ["objects": objects(1, "z"), "ttl": 600])?.stableCode == "lease_limit")
        #expect(try a.call("lease.list")["leases"]?.arrayValue?.count == 3)
    }
}
