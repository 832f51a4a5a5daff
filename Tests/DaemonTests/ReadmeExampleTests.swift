// The README's media-cache example, taken from README.md and run by bash as written against the
// built assetd and assetctl, so the example cannot drift from what they do.

import Foundation
import Testing

@Suite("README examples")
struct ReadmeExampleTests {
    /// The indented lines of README.md's section `heading`, unindented: its shell example.
    static func example(under heading: String) throws -> String {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md").path
        let lines = try String(contentsOfFile: readme, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring(heading)) else { return "" }
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") }
        return section.filter { $0.hasPrefix("    ") }.map { $0.dropFirst(4) }.joined(separator: "\n") + "\n"
    }

    @Test("the media cache: a thumbnail goes with its video, and enforce keeps the budget by recency")
    func mediaCache() throws {
        let script = try Self.example(under: "## Example: a media cache")
        #expect(script.contains("assetd --config") && script.contains("assetctl enforce"), "\(script)")
        let tmp = "/tmp/assetd-readme-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        // -e: a failing step stops the script. Output goes to files, not pipes, since the
        // daemon it starts in the background keeps them open; it is stopped below whatever
        // happened.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-e", "-c", script]
        p.environment = ["PATH": "\(Binaries.directory):/usr/bin:/bin", "TMPDIR": tmp, "HOME": tmp]
        #expect(FileManager.default.createFile(atPath: tmp + "/stdout", contents: nil))
        #expect(FileManager.default.createFile(atPath: tmp + "/stderr", contents: nil))
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: tmp + "/stdout"))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: tmp + "/stderr"))
        p.standardInput = FileHandle.nullDevice
        try withDefaultSignalMask { try p.run() }
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            p.waitUntilExit()
            exited.signal()
        }
        if exited.wait(timeout: .now() + 120) == .timedOut {
            p.terminate()
            exited.wait()
        }
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
        where FileManager.default.fileExists(atPath: "\(tmp)/\(folder)/control.sock") {
            _ = try? runProcess(Binaries.assetctl, ["--socket", "\(tmp)/\(folder)/control.sock", "shutdown"])
        }
        let r = ProcessResult(
            status: p.terminationStatus, stdout: try String(contentsOfFile: tmp + "/stdout", encoding: .utf8),
            stderr: try String(contentsOfFile: tmp + "/stderr", encoding: .utf8))
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        #expect(r.stderr == "", "\(r.stderr)")
        // The dry run and the run name the same plan: the least recently used video and, by
        // its rule, its thumbnail; v1 was touched and v4 deleted by hand.
        let planned = r.stdout.split(separator: "\n").map { $0.split(separator: " ") }
            .filter { $0.count >= 2 && ["videos", "thumbnails"].contains($0[0]) }.map { "\($0[0])/\($0[1])" }
        #expect(planned == ["videos/v2", "thumbnails/v2", "videos/v2", "thumbnails/v2"], "\(r.stdout)")
        #expect(r.stdout.contains("deleted videos/v4\ndeleted thumbnails/v4\n"), "\(r.stdout)")
        #expect(r.stdout.contains("\nv1.jpg\nv1.mp4\nv3.jpg\nv3.mp4\nassetd is shutting down\n"), "\(r.stdout)")
    }
}
