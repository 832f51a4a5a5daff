// `stats`'s reply: the store's members that grow with it (the owners, two members each) are
// rendered on the pool thread, the daemon's figures added on the loop, and the two written
// as one object in key order. Rendered on the loop, a store with a million owners stalled
// every client for the time the reply took to build.

import AssetService
import JSON

enum StatsReply {
    /// The members rendered off the loop.
    static let grown = ["bytes_per_owner", "owners"]

    /// On the pool thread: moves the grown members of `outcome`'s result into its rendered ones.
    static func renderAhead(_ outcome: inout MethodOutcome) {
        guard case .object(var o) = outcome.result else { return }
        outcome.result = .null  // `o` is the only reference: no copy below
        for key in grown {
            guard let value = o.removeValue(forKey: key) else { continue }
            var text = [UInt8]()
            value.write(to: &text)
            outcome.renderedMembers[key] = text
        }
        outcome.result = .object(o)
    }

    /// Writes `members` and `rendered` as one object, keys sorted as `JSONValue.write` sorts them.
    static func write(_ members: [String: JSONValue], rendered: [String: [UInt8]], to out: inout [UInt8]) {
        let keys = (Array(members.keys) + rendered.keys.filter { members[$0] == nil }).sorted()
        out.append(UInt8(ascii: "{"))
        for (i, key) in keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            // A key of one or the other.
            if let text = rendered[key] { out.append(contentsOf: text) } else { members[key]!.write(to: &out) }
        }
        out.append(UInt8(ascii: "}"))
    }
}
