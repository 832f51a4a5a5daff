// Delete rules as the SQL sees them: `edge.rules` holds `DeleteRules.rawValue`, and statements
// test it with conditions spelled from the named rules here, never with bare bit numbers.

extension DeleteRules {
    /// SQL true for an edge row that carries any rule of this set (`rules & 32 != 0`).
    /// Interpolate it into a `static let` statement: it is a literal, built once.
    var sqlCondition: String { "rules & \(rawValue) != 0" }

    /// SQL true for an edge row that carries some rule outside this set (`rules & ~32 != 0`).
    var sqlConditionOutside: String { "rules & ~\(rawValue) != 0" }
}
