// The order of the socket workloads in each round of `assetbench socket`. On a shared machine
// another process's load comes and goes within seconds, and whatever runs first in a round
// inherits the previous round's WAL and checkpoints: rotating the order spreads both over
// every workload, and the medians of the rounds' ratios ignore a round that was hit.

/// One workload of a round, named for the progress lines.
struct SocketStep {
    let name: String
    let run: () throws -> Void

    init(_ name: String, _ run: @escaping () throws -> Void) {
        self.name = name
        self.run = run
    }

    /// `steps` for round `round` of `rounds`: rotated by an even share of the list each
    /// round, and reversed in odd rounds, so neighbours that the rotation keeps together swap
    /// which goes first (which pairs do depends on the list and the number of rounds).
    static func order(_ steps: [SocketStep], round: Int, of rounds: Int) -> [SocketStep] {
        let shift = rounds > 0 ? round * steps.count / rounds % max(1, steps.count) : 0
        let rotated = Array(steps[shift...] + steps[..<shift])
        return round % 2 == 0 ? rotated : rotated.reversed()
    }
}

/// The median of `values` (the mean of the middle two when their count is even); nan if none.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
