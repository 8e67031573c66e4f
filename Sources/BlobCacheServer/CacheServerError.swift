/// Why a `CacheServer` could not start.
///
///     catch CacheServerError.addressInUse(let address) { print("\(address) is taken") }
public enum CacheServerError: Error, Sendable, CustomStringConvertible {
    /// Another socket already listens on the address.
    case addressInUse(ListenAddress)
    /// Binding failed otherwise (unknown host, no permission for the port, …).
    case cannotListen(ListenAddress, reason: String)

    /// A one-line message (the CLI prints it).
    ///
    ///     print(error.description)
    public var description: String {
        switch self {
        case .addressInUse(let address): "cannot listen on \(address): the address is in use"
        case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
        }
    }
}
