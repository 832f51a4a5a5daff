// Another owner's deny edge through the socket, as two real non-admin clients under
// enforce_ownership (assetd(8), Access): nobody's delete of its own folder is not refused for a
// note of a uid without a passwd entry whose value names the folder through an admin's template.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct OwnersApartSocketTests {
    @Test(
        "under enforce_ownership another user's note does not deny nobody's delete of its folder",
        .enabled(
            if: Nobody.canSwitch && PeerIdentityTests.strayUID != nil, "needs root and setpriv to act as two users"))
    func denyAcrossOwners() throws {
        let eve = try #require(PeerIdentityTests.strayUID)
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let admin = try h.client()
        let deny: JSONValue = [
            "name": "parent", "field": "parent", "to": "folders", "rules": ["denyDeleteDestination"],
        ]
        _ = try admin.call("template.set", ["collection": "notes", "edges": [deny]])
        let folder = try h.assetctlAsNobody("put", "folders", "b", "{}")
        #expect(folder.status == 0, "\(folder.stderr)")
        let note = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(eve)", "--regid=\(eve)", "--clear-groups", Binaries.assetctl, "--socket", h.socket,
                "put", "notes", "n", #"{"parent":"b"}"#,
            ])
        #expect(note.status == 0, "\(note.stderr)")
        let rm = try h.assetctlAsNobody("rm", "folders", "b")
        #expect(rm.status == 0, "\(rm.stderr)")
        #expect(try admin.call("object.get", ["collection": "folders", "key": "b"]) == .null)
        #expect(try admin.call("object.get", ["collection": "notes", "key": "n"]) != .null)
    }
}
