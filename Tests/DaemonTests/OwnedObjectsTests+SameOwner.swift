// OwnedObjectsTests, continued: with enforce_ownership a cascade cut at an owner boundary leaves
// its survivor's value valid and keeps the survivor's age out of the eviction, and the rules between objects of one owner act as without it
// (reference counts, deny, on delete and eviction), so a wrongly "apart" pair or a count that
// misses its owner's edges shows here.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

extension OwnedObjectsTests {
    @Test("a cascade cut at Alice's derived edge nulls her field, and her next put of the value succeeds")
    func cutCascadeNullifies() throws {
        let (store, root) = try openStore(enforce: true)
        defer { store.close() }
        let (alice, bob) = try cascadeFixture(store, root: root, enforce: true, keys: ["A"])
        try call("object.delete", ref("blobs", "B"), bob)
        let edges = try call("edge.find", ["source": ref("a", "A")], alice)
        #expect(edges["edges"] == [])
        guard case .object(var value)? = try call("object.get", ref("a", "A"), alice)["value"] else {
            Issue.record("Alice's object went")
            return
        }
        #expect(value["refs"] == .null)
        value["x"] = 1
        #expect(failure("object.put", ["collection": "a", "key": "A", "value": .object(value)], alice) == nil)
    }

    @Test("two of Bob's retaining edges keep his blob when one goes, Alice's edge or not", arguments: [true, false])
    func sameOwnerRetainers(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (alice, bob, file) = try setUp(
            store, root: root, rule: "deleteDestinationIfAllSourcesDeleted", enforce: enforce)
        try call("object.put", ["collection": "a", "key": "P", "value": ["refs": "B"]], bob)
        try call("object.put", ["collection": "a", "key": "Q", "value": ["refs": "B"]], bob)
        try call("object.put", ["collection": "a", "key": "E", "value": ["refs": "B"]], alice)
        try call("object.delete", ref("a", "P"), bob)
        #expect(try bobIntact(store, file, bob))
    }

    @Test("Alice's object counting two of her destinations stays when one goes", arguments: [true, false])
    func sameOwnerDestinations(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (alice, _, _) = try setUp(
            store, root: root, rule: "deleteSourceIfAllDestinationsDeleted", enforce: enforce)
        try call("object.put", ["collection": "blobs", "key": "D1", "value": [:]], alice)
        try call("object.put", ["collection": "blobs", "key": "D2", "value": [:]], alice)
        try call("object.put", ["collection": "a", "key": "S", "value": ["refs": ["D1", "D2"]]], alice)
        try call("object.delete", ref("blobs", "D1"), alice)
        #expect(try call("object.get", ref("a", "S"), alice) != .null)
        try call("object.delete", ref("blobs", "D2"), alice)
        #expect(try call("object.get", ref("a", "S"), alice) == .null)
    }

    @Test("Bob's deny edge to his own blob refuses his delete and his eviction", arguments: [true, false])
    func sameOwnerDeny(enforce: Bool) throws {
        let clock = TestClock()
        let (store, root) = try openStore(enforce: enforce, clock: clock)
        defer { store.close() }
        let (_, bob, file) = try setUp(store, root: root, rule: "denyDeleteDestination", enforce: enforce)
        try call("object.put", ["collection": "a", "key": "P", "value": ["refs": "B"]], bob)
        // Pinned, so the eviction cannot take the deny edge's source first.
        try call("object.pin", ref("a", "P"), context(store, uid: 0, admin: true, enforce: enforce))
        #expect(failure("object.delete", ref("blobs", "B"), bob) == StoreError.Code.deleteDenied.rawValue)
        clock.advance(3600)  // past policy.min_age
        let plan = try store.evict(bytes: nil, owner: "u1002")
        #expect(plan.objects.isEmpty)
        #expect(plan.skipped[.deny] == 1)
        #expect(try bobIntact(store, file, bob))
    }

    @Test(
        "Alice's young object cascading from Bob's blob keeps it from his eviction only without enforce_ownership",
        arguments: [true, false])
    func youngCascadeAcrossOwners(enforce: Bool) throws {
        let clock = TestClock()
        let (store, root) = try openStore(enforce: enforce, clock: clock)
        defer { store.close() }
        let (alice, _, _) = try setUp(
            store, root: root, rule: "deleteSourceIfDestinationDeleted", enforce: enforce)
        clock.advance(3600)  // Bob's blob past policy.min_age, Alice's object not
        try call("object.put", ["collection": "a", "key": "A", "value": ["refs": "B"]], alice)
        let plan = try store.evict(bytes: nil, owner: "u1002")
        #expect(plan.objects.map(\.ref) == (enforce ? [ObjectRef("blobs", "B")] : []))
        #expect(try call("object.get", ref("a", "A"), alice) != .null)
    }
}
