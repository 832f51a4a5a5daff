// A registry row's claim (`file.claim`) read back as it was written: its fields are split at
// the space's byte, so the owner, last, is taken as its bytes whatever it starts with.

import Testing
@testable import AssetStore

@Suite struct FileClaimTextTests {
    static func claim(owner: String, birth: Int64?, acl: Bool) -> FileClaim {
        FileClaim(
            uid: 1000, owner: owner,
            folder: FolderSeen(
                device: 2049, inode: 77, owner: 1000, group: 100, mode: 0o41777, hasACL: acl, birth: birth))
    }

    @Test("a claim reads back as written, with or without a birth time, spaces in the owner kept")
    func roundTrip() {
        for claim in [
            Self.claim(owner: "alice", birth: 1_795_710_965_689_217_000, acl: false),
            Self.claim(owner: "bob smith", birth: nil, acl: true),
            Self.claim(owner: "caf\u{E9}", birth: -1, acl: false),
        ] {
            #expect(RowClaim(text: claim.text) == .claim(claim))
        }
    }

    @Test("an owner starting with a combining mark: the space before it still separates the fields")
    func ownerStartingWithCombiningMark() {
        // By Characters, the space and U+0301 were one Character, not the separator: the claim
        // read as unidentifiable, and its file was never taken to be unlinked.
        let claim = Self.claim(owner: "\u{301}x", birth: nil, acl: false)
        #expect(RowClaim(text: claim.text) == .claim(claim))
    }

    @Test("a claim that is not one stays unidentifiable")
    func malformed() {
        #expect(RowClaim(text: "1000 2049 77 1000 100 16895 2 - alice") == .unidentifiable)
        #expect(RowClaim(text: "1000 2049 77 1000 100 16895 0 -") == .unidentifiable)
        #expect(RowClaim(text: "x 2049 77 1000 100 16895 0 - alice") == .unidentifiable)
        #expect(RowClaim(text: nil) == RowClaim.none)
    }
}
