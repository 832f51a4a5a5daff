// The daemon's clock for durations and deadlines: monotonic, so a change of the wall clock
// never stretches or cuts them.

import Foundation

/// Monotonic seconds.
enum QueryClock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
