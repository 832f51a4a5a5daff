// File references (assetd(8), DATA MODEL, Files): accepted spellings and their one normal form, and
// every way a reference is refused, through the `file` field and through a manual edge alike. A
// refused reference fails its whole transaction.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

/// A spelling of a reference; `{root}` and `{dir}` stand for the fixture's root and temp folder.
struct Spelling: Sendable, CustomStringConvertible {
    var text: String
    init(_ text: String) { self.text = text }
    func expand(_ f: Fixture) -> String {
        text.replacingOccurrences(of: "{root}", with: f.root).replacingOccurrences(of: "{dir}", with: f.dir)
    }
    var description: String { text.isEmpty ? "(empty)" : text }
}

/// Spellings of `{root}/a/b c.bin`.
let acceptedSpellings: [Spelling] = [
    Spelling("{root}/a/b c.bin"),
    Spelling("{root}//a///b c.bin"),
    Spelling("{root}/./a/./b c.bin"),
    Spelling("{root}/a/b c.bin/"),
    Spelling("{root}/a/b c.bin//."),
    Spelling("file://{root}/a/b%20c.bin"),
    Spelling("file://{root}/%61/b%20c%2Ebin"),
    Spelling("file://{root}/a%2Fb%20c.bin"),
    Spelling("file://{root}//a/./b%20c.bin/"),
    Spelling("file://localhost{root}/a/b%20c.bin"),
]

/// References refused before the file system is looked at, with the code each gets.
let refusedSpellings: [(Spelling, StoreError.Code)] = [
    (Spelling("{root}/a/../b.bin"), .invalidPath),
    (Spelling("{root}/a/.."), .invalidPath),
    (Spelling("{root}/../root/b.bin"), .invalidPath),
    (Spelling("file://{root}/a/%2E%2E/b.bin"), .invalidPath),
    (Spelling("file://{root}/a/%2e%2e/b.bin"), .invalidPath),
    (Spelling("file://{root}/b%zz.bin"), .invalidPath),
    (Spelling("file://example.com{root}/b.bin"), .invalidPath),
    (Spelling("a/b.bin"), .invalidPath),
    (Spelling("./b.bin"), .invalidPath),
    (Spelling("root/b.bin"), .invalidPath),
    (Spelling(""), .invalidPath),
    (Spelling("{dir}/elsewhere/b.bin"), .pathOutsideRoots),
    (Spelling("file://{dir}/elsewhere/b.bin"), .pathOutsideRoots),
    (Spelling("{root}x/b.bin"), .pathOutsideRoots),
    (Spelling("{root}"), .pathOutsideRoots),
    (Spelling("/etc/passwd"), .pathOutsideRoots),
]

/// Something already at (or above) the referenced path that makes it unacceptable.
enum Obstruction: String, CaseIterable, Sendable {
    case directory
    case directoryWithFiles
    case symlinkToFile
    case danglingSymlink
    case fifo
    case symlinkedFolder
    case symlinkedFolderOutsideRoot
    case symlinkedFolderAboveMissingFile
    case symlinkedFolderTwoLevelsUp

    var expected: StoreError.Code {
        switch self {
        case .directory, .directoryWithFiles, .symlinkToFile, .danglingSymlink, .fifo: return .notARegularFile
        case .symlinkedFolder, .symlinkedFolderOutsideRoot, .symlinkedFolderAboveMissingFile,
            .symlinkedFolderTwoLevelsUp:
            return .unsafePath
        }
    }

    /// Builds the obstruction and returns the path to reference.
    func make(in f: Fixture) throws -> String {
        switch self {
        case .directory:
            let p = f.root + "/d/thing"
            try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
            return p
        case .directoryWithFiles:
            try f.makeFile("d/thing/inside.bin")
            return f.root + "/d/thing"
        case .symlinkToFile:
            let target = try f.makeFile("d/real.bin")
            try makeSymlink(at: f.root + "/d/thing", to: target)
            return f.root + "/d/thing"
        case .danglingSymlink:
            try makeSymlink(at: f.root + "/d/thing", to: f.root + "/d/nothing-here")
            return f.root + "/d/thing"
        case .fifo:
            try makeFifo(at: f.root + "/d/thing")
            return f.root + "/d/thing"
        case .symlinkedFolder:
            try f.makeFile("real/x.bin")
            try makeSymlink(at: f.root + "/link", to: f.root + "/real")
            return f.root + "/link/x.bin"
        case .symlinkedFolderOutsideRoot:
            try writeFile(f.dir + "/outside/x.bin")
            try makeSymlink(at: f.root + "/link", to: f.dir + "/outside")
            return f.root + "/link/x.bin"
        case .symlinkedFolderAboveMissingFile:
            try FileManager.default.createDirectory(atPath: f.root + "/real", withIntermediateDirectories: true)
            try makeSymlink(at: f.root + "/link", to: f.root + "/real")
            return f.root + "/link/not-yet.bin"
        case .symlinkedFolderTwoLevelsUp:
            try f.makeFile("real/b/x.bin")
            try makeSymlink(at: f.root + "/a", to: f.root + "/real")
            return f.root + "/a/b/x.bin"
        }
    }
}

@Suite struct PathTests {
    @Test("an accepted spelling is stored as the one normalised path", arguments: acceptedSpellings, Entry.allCases)
    func acceptedSpelling(spelling: Spelling, entry: Entry) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/b c.bin", size: 12)
        try entry.register(spelling.expand(f), from: ref("c", "k"), in: f)
        let obj = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(obj.files.map(\.path) == [path])
        #expect(obj.files.map(\.size) == [12])
        let report = try #require(try f.fileReport(path))
        #expect(report.record.path == path)
        #expect(report.edges.map(\.destination) == [.file(path)])
    }

    @Test("differently written references to one path are the same file, kept until its last holder goes")
    func spellingsShareOneFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/b c.bin")
        try f.put([
            (ref("c", "plain"), ["file": .string(f.root + "/a/b c.bin")]),
            (ref("c", "url"), ["file": .string("file://\(f.root)/a/b%20c.bin")]),
            (ref("c", "messy"), ["file": .string(f.root + "//a/./b c.bin/")]),
        ])
        try f.store.write { tx in
            try tx.put(ref("c", "manual"), value: [:])
            try tx.addEdge(
                name: "asset", source: ref("c", "manual"), destination: .file("file://\(f.root)/./a//b%20c.bin"),
                rules: .deleteDestinationIfAllSourcesDeleted)
        }
        let report = try #require(try f.fileReport(path))
        #expect(Set(report.edges.map(\.source.key)) == ["plain", "url", "messy", "manual"])
        #expect(Set(report.edges.map(\.destination)) == [.file(path)])
        #expect(report.retainedBy == 4)
        // A reader may use any spelling too.
        #expect(try f.fileReport("file://\(f.root)//a/b%20c.bin") == report)

        let first = try f.delete(ref("c", "plain"), ref("c", "url"), ref("c", "messy"))
        #expect(first.filesQueued.isEmpty)
        #expect(try f.store.pending().isEmpty)
        let last = try f.delete(ref("c", "manual"))
        #expect(last.filesQueued == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(!f.exists(path))
    }

    @Test(
        "a malformed or outside reference is refused with its code and the transaction leaves nothing",
        arguments: refusedSpellings, Entry.allCases)
    func refusedSpelling(refused: (Spelling, StoreError.Code), entry: Entry) throws {
        let f = try Fixture()
        try f.makeFile("a/b.bin")
        try writeFile(f.dir + "/elsewhere/b.bin")
        try writeFile(f.root + "x/b.bin")
        let reference = refused.0.expand(f)
        let error = expectCode(refused.1) { try entry.register(reference, from: ref("c", "k"), in: f) }
        #expect(error != nil, "\(reference) should be refused with \(refused.1.rawValue)")
        #expect(try !f.exists(ref("c", "k")))
        #expect(try f.count(EdgeFilter()) == 0)
        #expect(try f.store.read { try $0.lastCommit() } == 0)
    }

    @Test(
        "something other than a regular file at the path, or a symlinked folder above it, is refused",
        arguments: Obstruction.allCases, Entry.allCases)
    func obstruction(obstruction: Obstruction, entry: Entry) throws {
        let f = try Fixture()
        let path = try obstruction.make(in: f)
        let before = onDisk(path)
        let error = expectCode(obstruction.expected) { try entry.register(path, from: ref("c", "k"), in: f) }
        #expect(error != nil, "\(obstruction) should be refused with \(obstruction.expected.rawValue)")
        #expect(try !f.exists(ref("c", "k")))
        #expect(try f.fileReport(path) == nil)
        #expect(onDisk(path) == before)
    }

    @Test(
        "a file that does not exist yet is accepted with size 0 and marked missing",
        arguments: ["later.bin", "not/yet/there.bin"], Entry.allCases)
    func missingFileAccepted(relative: String, entry: Entry) throws {
        let f = try Fixture()
        let path = f.root + "/" + relative
        try entry.register(path, from: ref("c", "k"), in: f)
        let report = try #require(try f.fileReport(path))
        #expect(report.record.size == 0)
        #expect(report.record.missing)
        #expect(report.record.device == nil)
        #expect(report.record.inode == nil)
        #expect(report.edges.map(\.source) == [ref("c", "k")])
        #expect(try f.indexedSize(key: "k") == .int(0))
        #expect(!f.exists(path))
    }
}
