// `assetctl stats --prometheus` (assetctl(1), COMMANDS): the text exposition format node_exporter's
// textfile collector reads, checked by a small parser of that format written here.

import AssetClient
import AssetctlText
import AssetStore
import Foundation
import Testing

/// A parsed exposition: samples by metric name and labels, and the TYPE of each family.
struct Exposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    var samples: [Sample] = []
    var types: [String: String] = [:]
    var helps: Set<String> = []

    /// Parses `text`, failing on any line the format does not allow.
    init(_ text: String) throws {
        guard text.hasSuffix("\n") else { throw ParseError("the text must end with a newline") }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            if line.hasPrefix("# HELP ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                guard Exposition.isName(name), helps.insert(String(name)).inserted else {
                    throw ParseError("bad HELP: \(line)")
                }
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                guard parts.count == 2, Exposition.isName(parts[0]), types[String(parts[0])] == nil,
                    ["counter", "gauge", "summary", "histogram", "untyped"].contains(parts[1])
                else { throw ParseError("bad TYPE: \(line)") }
                guard !samples.contains(where: { $0.name == parts[0] }) else {
                    throw ParseError("TYPE after samples: \(line)")
                }
                types[String(parts[0])] = String(parts[1])
            } else if line.hasPrefix("#") || line.isEmpty {
                throw ParseError("unexpected line: \(line)")
            } else {
                samples.append(try Exposition.sample(Substring(line)))
            }
        }
    }

    static func isName(_ s: Substring) -> Bool {
        guard let first = s.first, first.isLetter || first == "_" || first == ":" else { return false }
        return s.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "_" || $0 == ":" }
    }

    static func sample(_ line: Substring) throws -> Sample {
        var rest = line
        let name = rest.prefix { $0 != "{" && $0 != " " }
        guard isName(name) else { throw ParseError("bad metric name: \(line)") }
        rest = rest.dropFirst(name.count)
        var labels = [String: String]()
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let label = rest.prefix { $0 != "=" }
                guard isName(label), rest.dropFirst(label.count).hasPrefix("=\"") else {
                    throw ParseError("bad label: \(line)")
                }
                rest = rest.dropFirst(label.count + 2)
                var value = ""
                while true {
                    guard let c = rest.first else { throw ParseError("unterminated label value: \(line)") }
                    rest = rest.dropFirst()
                    if c == "\"" { break }
                    if c == "\\" {
                        switch rest.first {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw ParseError("bad escape: \(line)")
                        }
                        rest = rest.dropFirst()
                    } else {
                        guard c != "\n" else { throw ParseError("raw newline in label: \(line)") }
                        value.append(c)
                    }
                }
                guard labels.updateValue(value, forKey: String(label)) == nil else {
                    throw ParseError("label twice: \(line)")
                }
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw ParseError("bad label list: \(line)")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw ParseError("no value: \(line)") }
        let fields = rest.dropFirst().split(separator: " ")
        guard (1...2).contains(fields.count),
            let value = Double(fields[0])
                ?? ["+Inf": Double.infinity, "-Inf": -.infinity, "NaN": .nan][String(fields[0])]
        else { throw ParseError("bad value: \(line)") }
        return Sample(name: String(name), labels: labels, value: value)
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}

@Suite struct PrometheusTests {
    @Test("stats --prometheus parses as the exposition format and carries the store's numbers")
    func statsParse() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1 << 40))
        let c = try h.client()
        let file = try h.makeFile("a.bin", size: 123)
        try c.call(
            "object.put", ["collection": "photos", "key": "p1", "value": ["file": .string(file)], "owner": "alice"])
        try c.call("object.put", ["collection": "photos", "key": "p2", "value": [:], "owner": "bob"])
        try c.call(
            "object.put",
            [
                "collection": "photos", "key": "p3", "value": ["file": .string(try h.makeFile("b.bin", size: 7))],
                "owner": "bob",
            ])
        let evicted = try c.call("policy.evict", ["owner": "bob"])
        #expect(evicted["objects"]?.arrayValue?.count == 1, "\(evicted.serialized())")
        #expect(eventually { !h.exists(h.root + "/b.bin") })
        let r = try h.assetctl("stats", "--prometheus")
        #expect(r.status == 0, "\(r.stderr)")
        let e = try Exposition(r.stdout)
        #expect(e.value("assetd_objects") == 2)
        #expect(e.value("assetd_files") == 1)
        #expect(e.value("assetd_bytes") == 123)
        #expect(e.value("assetd_owner_bytes", ["owner": "alice"]) == 123)
        #expect(e.value("assetd_owners_omitted") == 0)
        #expect(e.types["assetd_owner_bytes"] == "gauge" && e.types["assetd_requests_total"] == "counter")
        #expect(e.value("assetd_policy_deleted_by_reason_total", ["reason": "evict"]) == 1)
        #expect(e.value("assetd_policy_freed_bytes_total") == 7)
        #expect(e.value("assetd_unlink_outcomes_total", ["outcome": "unlinked"]) == 1)
        #expect((e.value("assetd_wal_frames") ?? 0) > 0)
        #expect(
            e.value("assetd_checkpoint_failures_total") == 0 && e.types["assetd_checkpoint_failures_total"] == "counter"
        )
        #expect(e.value("assetd_writes_refused") == 0 && e.types["assetd_writes_refused"] == "gauge")
        #expect(e.samples.allSatisfy { $0.name.hasPrefix("assetd_") })
        #expect(Set(e.samples.map(\.name)).isSubset(of: e.helps), "every family has HELP")
        #expect(Set(e.samples.map(\.name)).isSubset(of: Set(e.types.keys)), "every family has TYPE")
    }

    @Test("label values with quotes, backslashes and newlines are escaped and read back exactly")
    func escaping() throws {
        let owner = "a\"b\\c\nd é"
        let text = Prometheus.exposition(stats: ["bytes_per_owner": [owner: 5], "objects": 1])
        let e = try Exposition(text)
        #expect(e.value("assetd_owner_bytes", ["owner": owner]) == 5, "\(text)")
        #expect(text.contains(#"owner="a\"b\\c\nd é""#), "\(text)")
        #expect(throws: Exposition.ParseError.self) { try Exposition("assetd_x{owner=\"a\"b\"} 1\n") }
    }

    @Test("an owner name holding a carriage return before a newline still yields one line per sample")
    func crlfInLabel() throws {
        // Swift reads "\r\n" as one Character, so escaping by Character misses its newline.
        let text = Prometheus.exposition(stats: ["bytes_per_owner": ["a\r\nb": 5]])
        let lines = Array(text.utf8).split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines.allSatisfy { $0.hasPrefix("# ") || $0.hasPrefix("assetd_") }, "\(text.debugDescription)")
        #expect(text.contains("owner=\"a\r\\nb\""), "\(text.debugDescription)")
    }

    @Test("owners whose names are only canonically equivalent are two series, from stats' owners")
    func lookalikeOwners() {
        let (bob, eve) = ("caf\u{e9}", "cafe\u{301}")
        let stats: JSONValue = [
            "bytes_per_owner": ["alice": 5],
            "owners": [
                ["owner": "alice", "bytes": 5], ["owner": .string(eve), "bytes": 100],
                ["owner": .string(bob), "bytes": 300],
            ],
        ]
        let lines = Array(Prometheus.exposition(stats: stats).utf8).split(separator: UInt8(ascii: "\n")).map(Array.init)
        let samples = lines.filter { $0.starts(with: Array("assetd_owner_bytes{".utf8)) }
        #expect(
            samples
                == [
                    #"assetd_owner_bytes{owner="alice"} 5"#, "assetd_owner_bytes{owner=\"\(eve)\"} 100",
                    "assetd_owner_bytes{owner=\"\(bob)\"} 300",
                ].map { Array($0.utf8) })
    }

    @Test("owners stats left out past max_reply_bytes are counted")
    func ownersOmitted() throws {
        let text = Prometheus.exposition(stats: ["owners": [["owner": "alice", "bytes": 5]], "owners_omitted": 3])
        #expect(try Exposition(text).value("assetd_owners_omitted") == 3, "\(text)")
    }
}
