// Command-line options, the scratch folder every run works in, and the real files the
// workloads put and delete: small, of varied sizes, 1,000 to a folder. Everything made
// here is removed by `Scratch.removeAll`.

import Foundation
import Glibc

/// `assetbench [N] [scratch-folder]`.
struct Options {
    /// Objects per workload.
    var n = 100_000
    /// The folder to make the run's folders in (default: a new one in TMPDIR).
    var folder: String?

    init(_ arguments: [String]) {
        let rest = Array(arguments.dropFirst())
        if let first = rest.first {
            guard let v = Int(first), v >= 1000 else {
                printError("usage: assetbench [N >= 1000] [scratch-folder]")
                exit(2)
            }
            n = v
        }
        if rest.count > 1 { folder = rest[1] }
        if rest.count > 2 {
            printError("usage: assetbench [N >= 1000] [scratch-folder]")
            exit(2)
        }
    }
}

/// A fresh folder for the run, removed (with everything below it) at the end.
final class Scratch {
    /// The run's folder.
    let path: String

    init(parent: String?) {
        let base = parent ?? ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array((base + "/assetbench-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            printError("assetbench: cannot make a folder in \(base): \(String(cString: strerror(errno)))")
            exit(1)
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // NUL-terminated by mkdtemp
    }

    /// A new folder below the run's folder.
    func folder(_ name: String) throws -> String {
        let p = path + "/" + name
        try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        return p
    }

    /// Removes a folder made by `folder`.
    func remove(_ folder: String) {
        precondition(folder.hasPrefix(path + "/"), "only folders below the scratch folder are removed")
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Removes the run's folder.
    func removeAll() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// `count` real files below `root`, file i in folder `d<i/1000>`, of `FileSet.size(i)` bytes.
struct FileSet {
    /// The folder holding the file folders (an engine's managed root).
    let root: String
    /// Absolute paths, by index.
    let paths: [String]
    /// Folder paths, by folder index.
    let folders: [String]
    /// File names within their folder, by index.
    let names: [String]

    static let perFolder = 1000

    /// A small size that varies from file to file (1 to 1,024 bytes), the same on both sides.
    static func size(_ i: Int) -> Int { 1 + Int((UInt64(i) &* 2_654_435_761) % 1024) }

    /// Creates the files.
    init(root: String, count: Int) throws {
        self.root = root
        var paths = [String]()
        var folders = [String]()
        var names = [String]()
        paths.reserveCapacity(count)
        names.reserveCapacity(count)
        let content = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
        for i in 0..<count {
            if i % FileSet.perFolder == 0 {
                let folder = root + "/d" + pad(i / FileSet.perFolder, 4)
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                folders.append(folder)
            }
            let name = "f" + pad(i, 8)
            let path = folders[folders.count - 1] + "/" + name
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw BenchError("open \(path): \(String(cString: strerror(errno)))") }
            let size = FileSet.size(i)
            let written = content.withUnsafeBytes { write(fd, $0.baseAddress, size) }
            close(fd)
            guard written == size else { throw BenchError("write \(path) failed") }
            paths.append(path)
            names.append(name)
        }
        self.paths = paths
        self.folders = folders
        self.names = names
    }

    /// How many of the files still exist (checks a sweep).
    func existing() -> Int {
        var st = stat()
        return paths.reduce(0) { $0 + (lstat($1, &st) == 0 ? 1 : 0) }
    }
}

/// `i` in decimal, zero-padded to `width` digits.
func pad(_ i: Int, _ width: Int) -> String {
    let s = String(i)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

/// A failed setup or a result that does not match (the numbers would mean nothing).
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Throws unless `condition`: both sides must have done the work they were timed on.
func check(_ condition: Bool, _ what: @autoclosure () -> String) throws {
    if !condition { throw BenchError("check failed: " + what()) }
}
