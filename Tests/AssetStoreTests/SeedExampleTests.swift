// The examples of the seed documents (YapDatabase's Relationships wiki, Core Data's delete
// rules), each as the behaviour it promises.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct SeedExampleTests {
    @Test("player/avatar: deleting the player deletes its avatar; deleting the avatar keeps the player")
    func playerAvatar() throws {
        let f = try Fixture()
        let player = ref("players", "p1"), avatar = ref("avatars", "p1")
        try f.put([(player, [:]), (avatar, [:])])
        try f.addEdge("avatar", player, .object(avatar), .deleteDestinationIfSourceDeleted)
        try f.delete(avatar)
        #expect(try f.exists(player))
        try f.put([(avatar, [:])])
        try f.addEdge("avatar", player, .object(avatar), .deleteDestinationIfSourceDeleted)
        let r = try f.delete(player)
        #expect(r.deletedRefs == [player, avatar])
    }

    @Test("player/avatar inverse: an avatar pointing at its player goes with the player")
    func playerAvatarInverse() throws {
        let f = try Fixture()
        let player = ref("players", "p1"), avatar = ref("avatars", "p1")
        try f.put([(player, [:]), (avatar, [:])])
        try f.addEdge("player", avatar, .object(player), .deleteSourceIfDestinationDeleted)
        try f.delete(player)
        #expect(try !f.exists(avatar))
    }

    @Test("contact/phone numbers: one contact owns many numbers, and they all go with it")
    func contactPhoneNumbers() throws {
        let f = try Fixture()
        try f.setTemplate(
            "contacts", templateEdge("phone", field: "phones", to: "phones", .deleteDestinationIfSourceDeleted))
        try f.put([
            (ref("phones", "1"), [:]), (ref("phones", "2"), [:]), (ref("phones", "3"), [:]),
            (ref("contacts", "alice"), ["phones": keys("1", "2", "3")]),
        ])
        #expect(try f.count(EdgeFilter(name: "phone", source: ref("contacts", "alice"))) == 3)
        try f.delete(ref("phones", "2"))
        #expect(try f.exists(ref("contacts", "alice")))
        let r = try f.delete(ref("contacts", "alice"))
        #expect(Set(r.deletedRefs) == [ref("contacts", "alice"), ref("phones", "1"), ref("phones", "3")])
    }

    @Test("neighbourhood: shared info stays while any property references it and goes with the last")
    func neighbourhoodRefCount() throws {
        let f = try Fixture()
        try f.setTemplate(
            "properties",
            templateEdge(
                "neighborhood", field: "hood", to: "hoods", .deleteDestinationIfAllSourcesDeleted))
        let hood = ref("hoods", "soma")
        let empty: JSONValue = [:]
        try f.put([(hood, empty)] + (1...3).map { (ref("properties", "\($0)"), JSONValue.object(["hood": "soma"])) })
        try f.delete(ref("properties", "1"))
        #expect(try f.exists(hood))
        try f.delete(ref("properties", "2"))
        #expect(try f.exists(hood))
        let r = try f.delete(ref("properties", "3"))
        #expect(r.deletedRefs == [ref("properties", "3"), hood])
    }

    @Test("song/album/artist: the album goes with its last song, and a song goes with its album")
    func songAlbumArtist() throws {
        let f = try Fixture()
        let rules: DeleteRules = [.deleteDestinationIfAllSourcesDeleted, .deleteSourceIfDestinationDeleted]
        try f.setTemplate(
            "songs", templateEdge("album", field: "albumId", to: "albums", rules),
            templateEdge("artist", field: "artistId", to: "artists", rules))
        try f.put([
            (ref("albums", "a1"), [:]), (ref("albums", "a2"), [:]), (ref("artists", "x"), [:]),
            (ref("songs", "s1"), ["albumId": "a1", "artistId": "x"]),
            (ref("songs", "s2"), ["albumId": "a1", "artistId": "x"]),
            (ref("songs", "s3"), ["albumId": "a2", "artistId": "x"]),
        ])
        try f.delete(ref("songs", "s1"))
        #expect(try f.exists(ref("albums", "a1")))
        // Deleting album a2 deletes its song s3; the artist keeps s2.
        let r = try f.delete(ref("albums", "a2"))
        #expect(r.deletedRefs == [ref("albums", "a2"), ref("songs", "s3")])
        #expect(try f.exists(ref("artists", "x")))
        // The last song goes: its album and its artist follow.
        let last = try f.delete(ref("songs", "s2"))
        #expect(Set(last.deletedRefs) == [ref("songs", "s2"), ref("albums", "a1"), ref("artists", "x")])
    }

    @Test("city/state flag: the flag image file is unlinked when the last city showing it goes")
    func cityStateFlag() throws {
        let f = try Fixture()
        let flag = try f.makeFile("flags/ca.png", size: 2048)
        try f.setTemplate(
            "cities", templateEdge("stateFlag", field: "flag", to: "file", .deleteDestinationIfAllSourcesDeleted))
        try f.put([
            (ref("cities", "sf"), ["flag": .string(flag)]), (ref("cities", "la"), ["flag": .string(flag)]),
            (ref("cities", "sd"), ["flag": .string(flag)]),
        ])
        #expect(try f.store.read { try $0.file(flag) }?.retainedBy == 3)
        for city in ["sf", "la"] {
            #expect(try f.delete(ref("cities", city)).filesQueued.isEmpty)
            _ = try f.store.sweep()
            #expect(f.exists(flag))
        }
        #expect(try f.delete(ref("cities", "sd")).filesQueued == [flag])
        #expect(try f.store.sweep().unlinked == [flag])
        #expect(!f.exists(flag))
    }

    @Test("player avatar file: a file owned by its object is unlinked when the object goes")
    func avatarFile() throws {
        let f = try Fixture()
        let image = try f.makeFile("avatars/p1.png")
        try f.setTemplate(
            "players", templateEdge("avatar", field: "avatarFile", to: "file", .deleteDestinationIfSourceDeleted))
        try f.put([(ref("players", "p1"), ["avatarFile": .string(image)])])
        try f.delete(ref("players", "p1"))
        _ = try f.store.sweep()
        #expect(!f.exists(image))
    }

    @Test("avatarID nullify: deleting the avatar sets the player's avatarID to null and notifies once")
    func avatarIDNullify() throws {
        let f = try Fixture()
        try f.setTemplate(
            "players",
            templateEdge(
                "avatar", field: "avatarID", to: "avatars",
                [.deleteDestinationIfSourceDeleted, .notifyIfDestinationDeleted]))
        let player = ref("players", "p1"), avatar = ref("avatars", "a1")
        try f.put([(avatar, [:]), (player, ["avatarID": "a1", "name": "Ann"])])
        let r = try f.delete(avatar)
        #expect(try f.value(player) == ["avatarID": nil, "name": "Ann"])
        #expect(r.notifications.count == 1)
        #expect(r.notifications.first?.node == player)
        #expect(r.notifications.first?.nullifiedField == "avatarID")
        // With the field null, putting the player again derives no edge and fails nothing.
        try f.put([(player, ["avatarID": nil, "name": "Ann"])])
        #expect(try f.count(EdgeFilter(source: player)) == 0)
    }

    @Test("Core Data nullify on a to-many field removes just the deleted element")
    func nullifyArrayElement() throws {
        let f = try Fixture()
        try f.setTemplate(
            "lists", templateEdge("item", field: "$.body.items", to: "items", .notifyIfDestinationDeleted))
        try f.put([
            (ref("items", "a"), [:]), (ref("items", "b"), [:]), (ref("items", "c"), [:]),
            (ref("lists", "l"), ["body": ["items": keys("a", "b", "c")]]),
        ])
        try f.delete(ref("items", "b"))
        #expect(try f.value(ref("lists", "l")) == ["body": ["items": keys("a", "c")]])
        #expect(try f.count(EdgeFilter(source: ref("lists", "l"))) == 2)
    }

    @Test("Core Data deny: a department with employees cannot be deleted; both together can")
    func denyDepartment() throws {
        let f = try Fixture()
        let dept = ref("departments", "eng"), emp = ref("employees", "e1")
        try f.put([(dept, [:]), (emp, [:])])
        try f.addEdge("member", emp, .object(dept), .denyDeleteDestination)
        let e = expectCode(.deleteDenied) { try f.delete(dept) }
        #expect(e != nil)
        #expect(e?.detail?["name"] == "member")
        #expect(try f.exists(dept))
        try f.delete(dept, emp)
        #expect(try !f.exists(dept) && !f.exists(emp))
    }
}
