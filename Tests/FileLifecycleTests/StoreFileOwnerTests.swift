// Root opening another user's store gives the lock and the ballast it creates to the
// database's owner (Store+Files.swift); one it cannot give is removed only from the folder it
// was made in, and only while its name still refers to it. The refusal is the test hook's
// (root's fchown to a valid uid does not fail on a local filesystem), and so is the swap the
// folder's owner makes meanwhile: the file's name given to a file of theirs, or the folder
// itself moved and a symlink to elsewhere put in its place.

import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

@testable import AssetStore

@Suite(.serialized) struct StoreFileOwnerTests {
    let folders = TempFolders(prefix: "store-owner.")
    static let nobody = StoreFileOwner(uid: 65534, gid: 65534)

    /// Runs `body` with the hook refusing to give away the file at `path`, after `swap`.
    static func refusing(_ path: String, swap: @escaping @Sendable () -> Void, _ body: () throws -> Void) rethrows {
        StoreFileOwner.giveRefused.withLock {
            $0 = { given in
                guard given == path else { return nil }
                swap()
                return EPERM
            }
        }
        defer { StoreFileOwner.giveRefused.withLock { $0 = nil } }
        try body()
    }

    static func contents(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    @Test("a lock file that cannot be given away is removed")
    func lockRemoved() throws {
        let dir = try folders.make()
        let lock = dir + "/db.sqlite.lock"
        Self.refusing(lock, swap: {}) {
            #expect(expectCode(.permissionDenied) { try StoreLock(path: lock, owner: Self.nobody) } != nil)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [])
    }

    @Test("a lock file not given away is not removed once its name is another file's")
    func lockNameSwapped() throws {
        let dir = try folders.make()
        let lock = dir + "/db.sqlite.lock"
        Self.refusing(
            lock,
            swap: {
                rename(lock, dir + "/moved")
                _ = FileManager.default.createFile(atPath: lock, contents: Data("theirs".utf8))
            }
        ) {
            #expect(expectCode(.permissionDenied) { try StoreLock(path: lock, owner: Self.nobody) } != nil)
        }
        #expect(Self.contents(lock) == "theirs")
        #expect(FileManager.default.fileExists(atPath: dir + "/moved"))
    }

    @Test("a lock file not given away is removed from its folder, not through a symlink put in its place")
    func lockFolderSwapped() throws {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/store", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: false)
        #expect(
            FileManager.default.createFile(atPath: dir + "/elsewhere/db.sqlite.lock", contents: Data("victim".utf8)))
        let lock = dir + "/store/db.sqlite.lock"
        Self.refusing(
            lock,
            swap: {
                rename(dir + "/store", dir + "/moved")
                symlink(dir + "/elsewhere", dir + "/store")
            }
        ) {
            #expect(expectCode(.permissionDenied) { try StoreLock(path: lock, owner: Self.nobody) } != nil)
        }
        #expect(Self.contents(dir + "/elsewhere/db.sqlite.lock") == "victim")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/moved") == [])
    }

    @Test("a ballast not given away is removed from its folder, not through a symlink put in its place")
    func ballastFolderSwapped() throws {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/store", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: false)
        let victim = dir + "/elsewhere/db.sqlite.ballast.new"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("victim".utf8)))
        let reserve = Reserve(database: dir + "/store/db.sqlite", wanted: 4096, owner: Self.nobody)
        Self.refusing(
            dir + "/store/db.sqlite.ballast.new",
            swap: {
                rename(dir + "/store", dir + "/moved")
                symlink(dir + "/elsewhere", dir + "/store")
            }
        ) {
            #expect(!reserve.restore())
        }
        #expect(Self.contents(victim) == "victim")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/moved") == [])
    }
}
