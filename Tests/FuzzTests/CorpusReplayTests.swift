// Every input of the committed fuzz corpus (Fuzz/Corpus/<target>/) run through the fuzzer's
// own entry point: what a fuzzer once found stays found. A finding traps, failing the run.

import Foundation
import FuzzTargets
import Testing

@Suite struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardized

    static func inputs(_ target: FuzzTarget) -> [URL] {
        let folder = corpus.appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test("each fuzz target's committed corpus replays without a finding", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        FuzzTarget.replaying = true
        let files = Self.inputs(target)
        #expect(files.count >= 10, "the corpus of \(target.rawValue) is at \(Self.corpus.path)")
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: file))
            bytes.withUnsafeBufferPointer { target.run($0) }
        }
    }
}
