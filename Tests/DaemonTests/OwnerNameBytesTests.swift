// With enforce_ownership, owners are told apart by the bytes of their names, as the database
// tells them apart: a user whose name is only canonically equivalent to another's (`cafe` +
// U+0301 against `caf` + U+00E9), which String's equality takes for the same, may not write,
// touch or lease the other's objects, nor put objects in the other's name. In process.

@testable import AssetDaemon
@testable import AssetService
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite("owner names compare as bytes")
struct OwnerNameBytesTests {
    let folders = TempFolders(prefix: "assetd-ownerbytes-")

    /// A caller named `name`, on a connection of its own, under enforce_ownership.
    private func caller(_ store: Store, _ uid: UInt32, _ name: String) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: uid, userName: name, isAdmin: false, gids: [uid]),
            enforceOwnership: true)
        ctx.connection = UInt64(uid)
        return ctx
    }

    private func code(_ method: String, _ params: JSONValue, _ ctx: MethodContext) -> String? {
        guard case .failure(let e) = MethodTable.call(method, params, ctx) else { return nil }
        return e.stableCode
    }

    @Test("a look-alike name may not act on another owner's objects, nor lease them")
    func lookalike() throws {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
        defer { store.close() }
        let bob = caller(store, 1001, "caf\u{e9}")
        let eve = caller(store, 1002, "cafe\u{301}")
        #expect(bob.caller.userName == eve.caller.userName)
        let o: JSONValue = ref("c", "o")
        #expect(code("object.put", ["collection": "c", "key": "o", "value": [:]], bob) == nil)
        #expect(code("object.put", ["collection": "c", "key": "o", "value": ["x": 1]], eve) == "permission_denied")
        #expect(code("object.touch", ["collection": "c", "key": "o"], eve) == "permission_denied")
        #expect(code("object.get", ["collection": "c", "key": "o", "touch": true], eve) == "permission_denied")
        #expect(code("lease.acquire", ["objects": [o], "ttl": "1h"], eve) == "permission_denied")
        #expect(code("object.delete", ["collection": "c", "key": "o"], eve) == "permission_denied")
        // Nor put an object in Bob's name, in the value or as the owner param.
        let named: [JSONValue] = [
            ["collection": "e", "key": "a", "value": ["owner": "caf\u{e9}"]],
            ["collection": "e", "key": "b", "value": [:], "owner": "caf\u{e9}"],
        ]
        for params in named { #expect(code("object.put", params, eve) == "permission_denied") }
        // Bob, byte for byte, still may.
        #expect(code("lease.acquire", ["objects": [o], "ttl": "1h"], bob) == nil)
        #expect(code("object.delete", ["collection": "c", "key": "o"], bob) == nil)
    }

    @Test("a look-alike owner's derived edge only lets go of another owner's object")
    func derivedRule() throws {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
        defer { store.close() }
        store.enforceOwnership = true
        let admin = MethodContext(
            store: store, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: true)
        let edges: JSONValue = [
            ["name": "of", "field": "of", "to": "c", "rules": ["deleteDestinationIfSourceDeleted"]]
        ]
        #expect(code("template.set", ["collection": "e", "edges": edges], admin) == nil)
        let eve = caller(store, 1002, "cafe\u{301}")
        #expect(
            code("object.put", ["collection": "c", "key": "o", "value": [:]], caller(store, 1001, "caf\u{e9}")) == nil)
        #expect(code("object.put", ["collection": "e", "key": "x", "value": ["of": "o"]], eve) == nil)
        #expect(code("object.delete", ["collection": "e", "key": "x"], eve) == nil)
        #expect(try store.read { try $0.exists(ref("c", "o")) })
    }

    @Test("two look-alike owners may have a quota each; one name twice is refused")
    func quotaConfig() throws {
        func parse(_ second: String) throws(ConfigError) -> DaemonConfig {
            let text = """
                [policy]
                  [[policy.quota]]
                  owner = "caf\u{e9}"
                  max_bytes = 100
                  [[policy.quota]]
                  owner = "\(second)"
                  max_bytes = 200
                """
            let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
            return try ConfigParser(file: "/etc/assetd/p.toml", text: text).parse(defaults: defaults)
        }
        let quotas = try #require(try parse("cafe\u{301}").policy?.quotas)
        #expect(quotas.map { Array($0.owner.utf8) } == [Array("caf\u{e9}".utf8), Array("cafe\u{301}".utf8)])
        #expect(throws: ConfigError.self) { try parse("caf\u{e9}") }
    }
}
