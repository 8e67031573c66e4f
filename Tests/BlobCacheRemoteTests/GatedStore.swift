import BlobCache
import Dispatch
import Foundation

/// A real remote store whose calls of one kind stop at a gate: the test learns when such a call
/// arrived (`arrived`) and says when it goes on (`release`), to order a race without sleeping.
final class GatedStore: RemoteStore, @unchecked Sendable {
    let inner: any RemoteStore
    /// Which calls stop: the method ("get", "exists", "put", "delete") and the object.
    let stops: @Sendable (String, RemoteObject) -> Bool
    let arrived = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    init(_ inner: any RemoteStore, stopping stops: @escaping @Sendable (String, RemoteObject) -> Bool) {
        self.inner = inner
        self.stops = stops
    }

    var description: String { "gated \(inner)" }

    private func gate(_ method: String, _ object: RemoteObject) {
        guard stops(method, object) else { return }
        arrived.signal()
        release.wait()
    }

    func get(_ object: RemoteObject) throws -> [UInt8]? { gate("get", object); return try inner.get(object) }
    func exists(_ object: RemoteObject) throws -> Bool { gate("exists", object); return try inner.exists(object) }
    func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws {
        gate("put", object)
        try inner.put(object, bytes: bytes, expiresAt: expiresAt)
    }
    func delete(_ object: RemoteObject) throws { gate("delete", object); try inner.delete(object) }
}
