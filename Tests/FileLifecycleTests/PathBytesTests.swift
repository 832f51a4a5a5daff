// Linux file names are bytes (assetd(8), DATA MODEL, Files and The unlink queue): a `/` is
// a separator and `..` is a parent wherever they occur, whatever Unicode characters come
// next, and a root matches only byte for byte. Non-ASCII names must be measured, confined
// and unlinked like ASCII ones.

import Foundation
import Glibc
import Testing
import AssetStore
import AssetStoreTestSupport

/// U+0301 COMBINING ACUTE ACCENT: glued to whatever precedes it, `/` included, in a Swift Character.
let combiningAcute = "\u{301}"
/// "ǻ" precomposed (U+01FB, 2 UTF-8 bytes) and decomposed (a, U+030A, U+0301: 5 bytes).
let composedRing = "\u{1FB}"
let decomposedRing = "a\u{30A}\u{301}"

struct ExitTestFailed: Error, CustomStringConvertible {
    var description: String
}

@Suite struct PathBytesTests {
    @Test("a plain path is taken literally, not percent-decoded")
    func plainPathNotDecoded() throws {
        let f = try Fixture()
        let literal = try f.makeFile("x%41.bin", size: 5)
        try f.makeFile("xA.bin", size: 9)
        try f.hold(literal, key: "k")
        let obj = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(obj.files.map(\.path) == [literal])
        #expect(obj.files.map(\.size) == [5])
    }

    @Test(
        "a .. segment is refused even when the next segment starts with a combining mark, and nothing outside the root is removed",
        arguments: Entry.allCases)
    func dotDotBeforeCombiningMark(entry: Entry) throws {
        let f = try Fixture()
        let outside = f.dir + "/" + combiningAcute + "x.bin"
        try writeFile(outside, size: 17)
        let reference = f.root + "/../" + combiningAcute + "x.bin"

        let error = expectCode(.invalidPath) { try entry.register(reference, from: ref("c", "k"), in: f) }
        #expect(error != nil, "\(reference) names \(outside), outside the root")
        if try f.exists(ref("c", "k")) {
            try f.delete(ref("c", "k"))
            _ = try f.store.sweep()
        }
        #expect(onDisk(outside)?.size == 17)
    }

    @Test(
        "a symlinked folder whose name starts with a combining mark is refused as unsafe_path",
        arguments: Entry.allCases)
    func symlinkedFolderNamedWithCombiningMark(entry: Entry) throws {
        let f = try Fixture()
        let canary = f.dir + "/outside/x.bin"
        try writeFile(canary, size: 17)
        try makeSymlink(at: f.root + "/" + combiningAcute + "d", to: f.dir + "/outside")
        let reference = f.root + "/" + combiningAcute + "d/x.bin"

        let error = expectCode(.unsafePath) { try entry.register(reference, from: ref("c", "k"), in: f) }
        #expect(error != nil)
        if try f.exists(ref("c", "k")) {
            try f.delete(ref("c", "k"))
            _ = try f.store.sweep()
        }
        #expect(onDisk(canary)?.size == 17)
    }

    @Test("a file in a folder whose name starts with a combining mark is measured and unlinked")
    func folderNamedWithCombiningMark() throws {
        let f = try Fixture()
        let path = try f.makeFile(combiningAcute + "d/x.bin", size: 10)
        try f.hold(path, key: "k")
        let record = try #require(try f.fileReport(path)).record
        #expect(record.size == 10)
        #expect(!record.missing)
        #expect(record.inode == onDisk(path)?.inode)

        try f.delete(ref("c", "k"))
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path])
        #expect(!f.exists(path), "reported unlinked but still on disk")
    }

    @Test("every file of one sweep is removed at its own path when a non-ASCII name comes first")
    func nonASCIINameThenAnotherFolder() throws {
        let f = try Fixture()
        let accented = try f.makeFile("d/\u{E9}\u{E9}.bin")
        let plain = try f.makeFile("x.bin")
        try f.hold(accented, key: "a")
        try f.hold(plain, key: "b")
        #expect(try f.delete(ref("c", "a"), ref("c", "b")).filesQueued == [accented, plain])

        let sweep = try f.store.sweep()
        #expect(Set(sweep.unlinked) == [accented, plain])
        #expect(!f.exists(accented))
        #expect(!f.exists(plain), "reported unlinked but still on disk")
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a sweep never removes a hard link at a path another object still holds")
    func hardLinkHeldElsewhere() throws {
        let f = try Fixture()
        let accented = try f.makeFile("d/\u{E9}\u{E9}.bin")
        let plain = try f.makeFile("x.bin")
        let linked = f.root + "/d/x.bin"
        #expect(link(plain, linked) == 0)
        try f.hold(accented, key: "a")
        try f.hold(plain, key: "b")
        try f.hold(linked, key: "keeper")
        try f.delete(ref("c", "a"), ref("c", "b"))

        _ = try f.store.sweep()
        #expect(f.exists(linked), "\(linked) is still held by c/keeper")
        #expect(!f.exists(plain))
        #expect(try f.fileReport(linked)?.edges.map(\.source) == [ref("c", "keeper")])
    }

    @Test("a path that only looks like it is below a root (Unicode-equivalent, different bytes) is outside it")
    func canonicallyEquivalentRoot() throws {
        let f = try Fixture()
        let root = f.dir + "/" + decomposedRing
        let lookalike = f.dir + "/" + composedRing + "/ab/c.bin"
        let bystander = root + "/ab/c.bin"
        try writeFile(lookalike, size: 11)
        try writeFile(bystander, size: 12)
        f.configuration.roots = [root]
        try f.reopen()

        let error = expectCode(.pathOutsideRoots) { try f.hold(lookalike, key: "k") }
        #expect(error != nil, "\(lookalike) is not below \(root) byte for byte")
        if try f.exists(ref("c", "k")) {
            try f.delete(ref("c", "k"))
            _ = try f.store.sweep()
        }
        #expect(onDisk(lookalike)?.size == 11)
        #expect(onDisk(bystander)?.size == 12)
    }

    @Test("a reference shorter in bytes than a Unicode-equivalent root is refused without crashing")
    func canonicallyEquivalentRootShorterPath() async {
        // In a child process: the engine may trap on it, which must fail this test only. No
        // files are needed, so a crash leaves nothing behind.
        await #expect(processExitsWith: .success) {
            let roots = try ManagedRoots(["/srv/" + decomposedRing])
            let error = expectCode(.pathOutsideRoots) { try roots.accept("/srv/" + composedRing + "/x") }
            guard error != nil else { throw ExitTestFailed(description: "accepted a path outside the root") }
        }
    }
}
