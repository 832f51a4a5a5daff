// The one place versions are written: the product's (assetd and assetctl print it for
// --version, ping reports it) and the control protocol's (ping reports it), which changes
// only when a client written for the old one could misread the new (assetd(8), CONTROL
// PROTOCOL).

/// assetd's versions.
public enum Version {
    /// The release of assetd and assetctl.
    public static let product = "0.1.0"
    /// The control protocol's version: bumped when a method's params or results change in a
    /// way an existing client would misread, not when methods or fields are added.
    public static let controlProtocol = 1
}
