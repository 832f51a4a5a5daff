// Runs every example of docs/PROTOCOL.md against a real daemon, in document order and on one
// store, so that the document cannot drift from what the daemon answers. The fenced blocks
// the document uses, and how each runs, are described in ProtocolDoc.swift.

import AssetService
import Foundation
import JSON
import Testing

@Suite struct ProtocolDocTests {
    @Test func everyMethodHasASection() throws {
        let headings = try String(contentsOfFile: ProtocolDoc.path, encoding: .utf8)
            .split(separator: "\n").filter { $0.hasPrefix("### ") }
            .flatMap { $0.dropFirst(4).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let missing = MethodTable.methods.keys.filter { !headings.contains($0) }.sorted()
        #expect(missing.isEmpty, "docs/PROTOCOL.md has no section for \(missing)")
    }

    @Test func everyExampleOfProtocolMDRuns() throws {
        let doc = try ProtocolDoc(contentsOf: ProtocolDoc.path)
        #expect(doc.blocks.count >= 30, "docs/PROTOCOL.md lost its examples")
        let unknown = doc.blocks.filter { $0.kind == nil }.map { "line \($0.line): \($0.info)" }
        #expect(unknown.isEmpty, "fenced blocks the test cannot run: \(unknown)")

        let daemon = try DaemonHarness(logLevel: "info")
        let work = daemon.dir + "/examples"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let places = ProtocolDoc.Places(
            socket: daemon.socket, root: daemon.root, state: (daemon.database as NSString).deletingLastPathComponent)
        for block in doc.blocks {
            // shutdown's example stops the daemon: the next example starts it again.
            if !daemon.isRunning { try daemon.start() }
            switch block.kind {
            case .transcript:
                try runTranscript(block, places)
                if block.text.contains(#""method":"shutdown""#) {
                    #expect(daemon.process.map { p in eventually { !p.isRunning } } ?? true)
                }
            case .console: try runConsole(block, places, in: work)
            case .file(let name):
                try places.apply(block.text).write(toFile: work + "/" + name, atomically: true, encoding: .utf8)
            case nil: break
            }
        }
    }

    /// Sends each group of `->` lines on one connection and matches the `<-` lines after it.
    private func runTranscript(_ block: ProtocolDoc.Block, _ places: ProtocolDoc.Places) throws {
        let conn = try RawConnection(path: places.socket)
        conn.setReceiveTimeout(60)
        for group in block.transcriptGroups() {
            for request in group.requests { conn.send(places.apply(request) + "\n") }
            var actual = [JSONValue]()
            for _ in group.replies {
                guard let line = conn.readLine() else { break }
                actual.append(line)
            }
            let expected = try group.replies.map { try JSONValue.parse(places.apply($0)) }
            expectMatch(expected, actual, block, context: group.requests.joined(separator: "\n"))
        }
    }

    /// Runs each `$` command with sh in `dir` and matches its output with the lines after it.
    private func runConsole(_ block: ProtocolDoc.Block, _ places: ProtocolDoc.Places, in dir: String) throws {
        for command in block.consoleCommands() {
            let result = try runProcess(
                "/bin/sh", ["-c", "cd '\(dir)' && " + places.apply(command.text)],
                environment: ProcessInfo.processInfo.environment.merging(["ASSETD_SOCKET": places.socket]) { $1 })
            #expect(
                result.status == 0, "line \(block.line): `\(command.text)` exited \(result.status): \(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let actual = lines.last == "" ? Array(lines.dropLast()) : lines
            let expected = command.output.map(places.apply)
            let same =
                actual.count == expected.count
                && zip(expected, actual).allSatisfy { e, a in
                    if let ej = try? JSONValue.parse(e), let aj = try? JSONValue.parse(a) {
                        return ProtocolDoc.matches(ej, aj)
                    }
                    return e == a
                }
            #expect(
                same,
                "line \(block.line): `\(command.text)` printed\n\(actual.joined(separator: "\n"))\nnot\n\(expected.joined(separator: "\n"))"
            )
        }
    }

    /// Every expected line matches one actual line (events may come before or after a reply).
    private func expectMatch(
        _ expected: [JSONValue], _ actual: [JSONValue], _ block: ProtocolDoc.Block, context: String
    ) {
        var left = actual
        var missing = [JSONValue]()
        for e in expected {
            if let i = left.firstIndex(where: { ProtocolDoc.matches(e, $0) }) {
                left.remove(at: i)
            } else {
                missing.append(e)
            }
        }
        #expect(
            missing.isEmpty && actual.count == expected.count,
            """
            line \(block.line): after
            \(context)
            the daemon answered
            \(actual.map { $0.serialized() }.joined(separator: "\n"))
            where the document says
            \(expected.map { $0.serialized() }.joined(separator: "\n"))
            """)
    }
}
