// Trimming by a set of characters spelled as a string (" \t"): the notations of the config
// file and the wire (Units.swift), the pid in the store's lock file.

extension String {
    /// The string without leading and trailing characters of `set`.
    public func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
