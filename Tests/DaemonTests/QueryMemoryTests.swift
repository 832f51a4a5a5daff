// What one call in a client's clause may take of the daemon's memory (assetd(8), Index
// queries): replace keeps no list of its matches, so a call takes about its output. Measured
// as the daemon's peak resident size (VmHWM, reset through /proc/PID/clear_refs) around one
// query, in its own process, away from what other tests allocate.

import AssetClient
import Foundation
import Testing

@Suite struct QueryMemoryTests {
    /// A figure of /proc/`pid`/status, in bytes.
    static func status(_ pid: Int32, _ field: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.count >= 2, let kib = Int(parts[1]) { return kib * 1024 }
        }
        throw POSIXError(.ENOENT)
    }

    @Test("replace with a one-byte pattern over 16 MB takes memory of the order of its output")
    func replaceMemory() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        _ = try c.putObject("q", "o1")
        let pid = try #require(h.process?.processIdentifier)
        // A query connection and its first values made, then the peak starts from now.
        _ = try c.call("index.aggregate", ["function": "length(replace('aa', 'a', 'b'))"])
        let before = try Self.status(pid, "VmRSS")
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
        let r = try c.call(
            "index.aggregate", ["function": "length(replace(printf('%.*c', 16000000, 'a'), 'a', 'b'))"])
        #expect(r == ["value": 16_000_000])
        // The text three times over (printf's, its copy, the output) is 48 MB; a list of the
        // 16 million matches' offsets alone was 128 MB.
        let grown = try Self.status(pid, "VmHWM") - before
        #expect(grown < 96 << 20, "the daemon's peak grew by \(grown >> 20) MiB")
    }

    @Test("62 printf values of 16 MB in one aggregate are refused at the memory bound, not held")
    func manyLongValues() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        _ = try c.putObject("q", "o1")
        let pid = try #require(h.process?.processIdentifier)
        _ = try c.call("index.aggregate", ["function": "length(printf('%.*c', 1000, 'a'))"])
        let before = try Self.status(pid, "VmRSS")
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
        let values = (0..<62).map { "printf('%.*c', 16000000, '\($0 % 10)')" }.joined(separator: ", ")
        let e = expectRPCError(Code.application, "query_rejected") { () throws(ClientError) in
            try c.call("index.aggregate", ["function": .string("length(max(\(values)))")])
        }
        // 8 values of the 16 MiB length limit and 32 MiB: 160 MiB (assetd.toml(5), max_reply_bytes).
        #expect(e?.message.contains("needed more than 167772160 bytes of memory") == true, "\(String(describing: e))")
        // Without the bound the daemon grew by 931 MiB; with it, by the bound and what a
        // refused allocation and the allocator's own rounding leave.
        let grown = try Self.status(pid, "VmHWM") - before
        #expect(grown < 224 << 20, "the daemon's peak grew by \(grown >> 20) MiB")
        #expect(try c.call("index.aggregate", ["function": "COUNT(*)"]) == ["value": 1])
    }
}
