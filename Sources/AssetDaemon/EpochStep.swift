// Debug builds only, for a test of a running assetd: while ASSETD_DEBUG_STEP_EPOCH names a
// file, the second's tick advances the stall epoch only if that file exists, and removes it,
// so a test decides when a second has passed for the connections behind and closing.
// Release builds advance it at every tick.

#if DEBUG
import Glibc

enum EpochStep {
    static let file = getenv("ASSETD_DEBUG_STEP_EPOCH").map { String(cString: $0) }

    /// Whether this tick advances the epoch: always, unless the variable is set.
    static func due() -> Bool {
        guard let file else { return true }
        return unlink(file) == 0
    }
}
#else
enum EpochStep {
    @inline(__always) static func due() -> Bool { true }
}
#endif
