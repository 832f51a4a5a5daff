// `ManagedRoots.normalise` returns a reference already in normal form as it is, after one pass
// over its bytes: that pass must accept exactly the references the long way (split and
// joined) leaves byte for byte unchanged, and every reference must come out the same both ways.

import Testing
@testable import AssetStore

@Suite struct NormalFormTests {
    /// The long way's answer: the normal form's bytes, or the error's code.
    static func longWay(_ reference: String) -> Outcome {
        do throws(StoreError) {
            return .normal(Array(try ManagedRoots.normaliseComponents(reference).utf8))
        } catch { return .refused(error.code) }
    }

    static func shortWay(_ reference: String) -> Outcome {
        do throws(StoreError) {
            return .normal(Array(try ManagedRoots.normalise(reference).utf8))
        } catch { return .refused(error.code) }
    }

    enum Outcome: Equatable {
        case normal([UInt8])
        case refused(StoreError.Code)
    }

    static let chosen = [
        "/", "//", "/a", "/a/", "/a//b", "/.", "/..", "/...", "/a/.", "/a/..", "/a/...", "/.a", "/..a", "/a.",
        "/a/./b", "/a/../b", "a/b", "", "/a\u{0}b", "file:///a", "/caf\u{E9}", "/cafe\u{301}", "/\u{301}x/y",
        "file:///\u{301}x", "/%2E%2E",
        "/" + String(repeating: "a", count: 4094), "/" + String(repeating: "a", count: 4095),
    ]

    /// Every string of 1 to 6 symbols of `alphabet`.
    static func allStrings(over alphabet: [String]) -> [String] {
        var all = [String]()
        var frontier = [""]
        for _ in 0..<6 {
            frontier = frontier.flatMap { p in alphabet.map { p + $0 } }
            all += frontier
        }
        return all
    }

    @Test("the one-pass check accepts exactly the references the long way leaves as they are")
    func fastPathAgrees() {
        // Every string of up to 6 symbols over an alphabet that makes each kind of component.
        let references = Self.chosen + Self.allStrings(over: ["/", ".", "a", "\u{0}", "\u{E9}", "%", "\u{301}"])
        var disagreements = [String]()
        for r in references {
            let long = Self.longWay(r)
            let unchanged = long == .normal(Array(r.utf8))
            if ManagedRoots.isNormal(r) != unchanged || Self.shortWay(r) != long {
                disagreements.append(r.debugDescription)
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
        #expect(references.count > 50_000)
    }

    @Test("a path's components below a root are its non-empty runs between slashes, as split gives them")
    func componentsAgree() {
        let paths = Self.chosen + Self.allStrings(over: ["/", "a", "\u{E9}", "\u{301}", "."])
        var disagreements = [String]()
        for path in paths {
            for root in ["", "/", "/a", "/a/\u{E9}", String(repeating: "/a", count: 5)] {
                let expected = Array(path.utf8.dropFirst(root.utf8.count)).split(separator: UInt8(ascii: "/")).map {
                    Array(String(decoding: $0, as: UTF8.self).utf8)
                }
                if ManagedRoots.components(of: path, below: root).map({ Array($0.utf8) }) != expected {
                    disagreements.append("\(path.debugDescription) below \(root.debugDescription)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
        #expect(paths.count > 10_000)
    }
}
