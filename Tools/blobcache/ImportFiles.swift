import BlobCache
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Stores files in a cache on every core: each core reads the next file nobody has taken and
/// sets it, so that reading, hashing and compressing one file overlap with another's (the
/// engine still commits one set at a time). After the first failure no core takes another file.
struct ImportFiles: Sendable {
    /// Why an import stopped.
    enum Stop: Error {
        /// A file could not be read (the reason names it).
        case unreadable(String)
        /// The cache refused a set.
        case refused(any Error)
    }

    /// A file to store, and whether a symbolic link at its path is followed (only for a PATH
    /// the user named).
    struct File: Sendable {
        let key: String
        let path: String
        let followingLink: Bool
    }

    /// The files, each under its key; no key twice.
    let files: [File]
    let space: KeySpace

    /// Sets every file; `progress` is called with the count stored after each file stored, one
    /// call at a time and with counts in increasing order. Returns the bytes stored, or the first failure.
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

    private func store(_ file: File) -> Result<Int, Stop> {
        do {
            return .success(try FileTree.store(file.path, followingLink: file.followingLink, in: space, key: file.key))
        } catch let error as FileTree.Unreadable {
            return .failure(.unreadable("\(error)"))
        } catch {
            return .failure(.refused(error))
        }
    }
}
