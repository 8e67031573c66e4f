import BlobCache
import Dispatch
import Foundation
import Synchronization

/// Stores files in a cache on every core: each core reads the next file nobody has taken and
/// sets it, so that reading, hashing and compressing one file overlap with another's (the
/// engine still commits one set at a time). After the first failure no core takes another file.
struct ImportFiles: Sendable {
    /// Why an import stopped.
    enum Stop: Error {
        /// The file at this path could not be read.
        case unreadable(String)
        /// The cache refused a set.
        case refused(any Error)
    }

    /// The files, each under its key; no key twice.
    let files: [(key: String, path: String)]
    let space: KeySpace

    /// Sets every file; `progress` is called with the count done after each file, one call at
    /// a time and with counts in increasing order. Returns the bytes stored, or the first failure.
    func run(progress: @escaping @Sendable (Int) -> Void) -> Result<Int, Stop> {
        let next = Atomic<Int>(0)
        let state = Mutex<(done: Int, bytes: Int, stop: Stop?)>((0, 0, nil))
        DispatchQueue.concurrentPerform(iterations: max(1, ProcessInfo.processInfo.activeProcessorCount)) { _ in
            while case let index = next.wrappingAdd(1, ordering: .relaxed).oldValue, index < files.count,
                  state.withLock({ $0.stop == nil }) {
                let outcome = store(files[index])
                state.withLock { state in
                    switch outcome {
                    case .success(let bytes):
                        state.done += 1
                        state.bytes += bytes
                        progress(state.done)
                    case .failure(let stop):
                        if state.stop == nil { state.stop = stop }
                    }
                }
            }
        }
        return state.withLock { state in state.stop.map { .failure($0) } ?? .success(state.bytes) }
    }

    private func store(_ file: (key: String, path: String)) -> Result<Int, Stop> {
        guard let value = FileManager.default.contents(atPath: file.path) else { return .failure(.unreadable(file.path)) }
        do {
            _ = try space.set(value, forKey: file.key, expiry: nil, pinned: false)
            return .success(value.count)
        } catch {
            return .failure(.refused(error))
        }
    }
}
