// Who a peer is as an owner: its user database name when that is valid UTF-8 and does not
// start with `#`, else `#` and its uid. A repaired name (U+FFFD for each bad byte) made two
// users one owner, a uid without a passwd entry, named by its digits, was the owner of a user
// named so, and a user named `#1001` was uid 1001's owner.

@testable import AssetService
import AssetStore
import Foundation
import Testing

@Suite struct PeerIdentityTests {
    /// A uid with no passwd entry on this machine, or nil.
    static let strayUID: UInt32? = (UInt32(54_321)...54_400).first { getpwuid($0) == nil }

    @Test("a name that is not UTF-8 is # and the uid, not a repaired name two users share")
    func invalidUTF8Name() {
        func name(_ uid: UInt32, _ bytes: [UInt8]) -> String {
            (bytes.map(CChar.init(bitPattern:)) + [0]).withUnsafeBufferPointer {
                PeerIdentity.ownerName(uid: uid, passwdName: $0.baseAddress)
            }
        }
        #expect(name(1001, [0x61, 0xFF]) == "#1001")
        #expect(name(1002, [0x61, 0xFE]) == "#1002")
        #expect(name(1003, Array("café".utf8)) == "café")
        #expect(name(1004, []) == "#1004")
        #expect(PeerIdentity.ownerName(uid: 1005, passwdName: nil) == "#1005")
    }

    @Test("a passwd name starting with # is # and the uid too, so no user is named as another uid")
    func hashName() {
        func name(_ uid: UInt32, _ bytes: [UInt8]) -> String {
            (bytes.map(CChar.init(bitPattern:)) + [0]).withUnsafeBufferPointer {
                PeerIdentity.ownerName(uid: uid, passwdName: $0.baseAddress)
            }
        }
        #expect(name(1006, Array("#1001".utf8)) == "#1006")
        #expect(name(1007, [0x23]) == "#1007")
        #expect(name(1008, [0x23, 0xFF]) == "#1008")
        #expect(name(1009, Array("a#1001".utf8)) == "a#1001")
        // Every name a uid can get is its own: none is another uid's `#` form.
        let given = [(1001, [0x61, 0xFF]), (1006, Array("#1001".utf8)), (1009, Array("#1009".utf8))].map {
            name(UInt32($0.0), $0.1)
        }
        #expect(Set(given).count == given.count, "\(given)")
    }

    @Test("a uid without a passwd entry is # and the uid, and has only its own gid")
    func noPasswdEntry() throws {
        let uid = try #require(Self.strayUID)
        let peer = PeerIdentity(uid: uid, gid: uid)
        #expect(peer.userName == "#\(uid)")
        #expect(peer.gids == [uid])
    }

    @Test(
        "a client whose uid has no passwd entry owns its objects as #uid, not a user named by its digits",
        .enabled(if: Nobody.canSwitch && strayUID != nil, "needs root and setpriv to act as a stray uid"))
    func strayClient() throws {
        let uid = try #require(Self.strayUID)
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        let stray = { (args: [String]) throws -> ProcessResult in
            try runProcess(
                "/usr/bin/setpriv",
                ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", Binaries.assetctl, "--socket", h.socket] + args)
        }
        // An admin's object of the user that would be named by the uid's digits.
        #expect(try h.assetctl("put", "e", "digits", "--owner", "\(uid)", #"{"v":1}"#).status == 0)
        let put = try stray(["put", "e", "mine", #"{"v":1}"#])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try c.getObject("e", "mine")["owner"] == .string("#\(uid)"))
        #expect(try stray(["rm", "e", "digits"]).status == 1, "the user named \(uid) is another owner")
        #expect(try c.getObject("e", "digits")["owner"] == .string("\(uid)"))
    }

    @Test("assetctl --db names a uid's objects as the daemon names a client of that uid")
    func offlineOwnerName() throws {
        let uid = try #require(Self.strayUID)
        let h = try DaemonHarness()
        #expect(h.stop() == 0)
        // As a user without a passwd entry: the digits alone would be another user's name.
        let local = try LocalInvoker(databasePath: h.database, configPath: h.configPath, uid: uid)
        defer { local.close() }
        _ = try local.call("object.put", ["collection": "e", "key": "mine", "value": ["v": 1]])
        let owner = try local.call("object.get", ["collection": "e", "key": "mine"])["owner"]
        #expect(owner == .string("#\(uid)"))
        #expect(owner == .string(PeerIdentity(uid: uid, gid: uid).userName))
        // The library's default owner for a store opened by such a user: not its digits.
        #expect(StoreConfiguration.processUserName(uid: uid) == "#\(uid)")
    }

    /// A non-admin peer (uid 4242) in gid 1000 named `staff` and gid 2000 named `2000x`, plus
    /// the names given.
    static func peer(_ names: [String]) -> PeerIdentity {
        PeerIdentity(
            uid: 4242, gid: 1000, userName: "p", gids: [1000, 2000],
            groupNames: Set((["staff", "2000x"] + names).map { Array($0.utf8) }))
    }

    @Test("an admin group's gid matches gids only, and its name matches names byte for byte")
    func adminGroups() {
        #expect(!Self.peer([]).isAdmin(uids: [], groups: []))
        #expect(Self.peer([]).isAdmin(uids: [4242], groups: []))
        #expect(Self.peer([]).isAdmin(uids: [], groups: [.gid(2000)]))
        #expect(Self.peer([]).isAdmin(uids: [], groups: [.name("staff")]))
        // A group named by digits is not the gid of those digits, nor a gid a name.
        #expect(!Self.peer(["10"]).isAdmin(uids: [], groups: [.gid(10)]))
        #expect(Self.peer(["10"]).isAdmin(uids: [], groups: [.name("10")]))
        #expect(!Self.peer([]).isAdmin(uids: [], groups: [.name("1000")]))
        // A name only canonically equivalent to the admin group's is another group.
        #expect(!Self.peer(["cafe\u{301}"]).isAdmin(uids: [], groups: [.name("caf\u{e9}")]))
        #expect(Self.peer(["caf\u{e9}"]).isAdmin(uids: [], groups: [.name("caf\u{e9}")]))
    }
}
