// The config's log level as swift-log's: the same names, so the conversion cannot fail.

import AssetService
import Logging

extension Logger.Level {
    /// The level named like `level`.
    public init(_ level: LogLevel) {
        self = Logger.Level(rawValue: level.rawValue)!  // LogLevel's cases are Logger.Level's names
    }
}
