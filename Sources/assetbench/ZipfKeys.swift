// Keys drawn with Zipf-distributed popularity, for the skewed touching gets of the socket
// part: a media cache's hits are skewed, so one second's touches fall on fewer objects than
// uniform keys would touch, and the access flush writes fewer rows.

import Foundation

/// Draws key numbers in 0..<count, rank r (from 1) with probability ∝ 1/r^alpha; the ranks
/// are spread over the key numbers by a fixed shuffle, so popular keys are not neighbours.
struct ZipfKeys {
    private let cumulative: [Double]
    private let keyOfRank: [Int]

    init(count: Int, alpha: Double, seed: UInt64) {
        var total = 0.0
        cumulative = (1...count).map { rank in
            total += 1 / pow(Double(rank), alpha)
            return total
        }
        var rng = SplitMix64(seed: seed)
        keyOfRank = Array(0..<count).shuffled(using: &rng)
    }

    /// One key number.
    func next(using rng: inout SplitMix64) -> Int {
        let u = Double.random(in: 0..<cumulative[cumulative.count - 1], using: &rng)
        var (low, high) = (0, cumulative.count - 1)
        while low < high {
            let mid = (low + high) / 2
            if cumulative[mid] > u { high = mid } else { low = mid + 1 }
        }
        return keyOfRank[low]
    }
}
