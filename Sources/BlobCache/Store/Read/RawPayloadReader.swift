import Synchronization
import SystemPackage

/// Reads a large payload stored raw straight into the value it becomes, and checks it as it
/// arrives: the file is read in pieces on every core, and each piece is hashed, in order, by
/// whichever core is free as soon as it is in memory. A raw blob then costs about one copy
/// from the page cache: no second copy out of a file buffer, the checksum hidden behind the
/// reads (a 1 MiB get otherwise pays a copy, then a hash, after reading the whole file).
///
///     let read = try RawPayloadReader.read(fd, count: n, at: 32, checksum: running, io: io, path: path)
enum RawPayloadReader {
    /// The most pieces a payload is cut into (a 64-bit mask says which have arrived).
    static let maxPieces = 64
    /// The smallest piece: large enough that handing it over costs little against reading it.
    static let minimumPiece = 128 << 10

    /// `count` bytes of `fd` at `offset` and `checksum` finished over them; `nil` when the file
    /// ends before them. Throws `BlobCacheError.io` when a read fails.
    static func read(_ fd: FileDescriptor, count: Int, at offset: Int64, checksum: RunningChecksum,
                     io: FileIO, path: CachePath) throws -> (value: [UInt8], digest: UInt64)? {
        guard count > 0 else { return ([], checksum.finish(tail: UnsafeRawBufferPointer(start: nil, count: 0))) }
        var outcome: Outcome = .complete(0)
        let value = [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            let work = Work(buffer: UnsafeMutableRawBufferPointer(storage), checksum: checksum) { piece, start in
                try io.readFully(fd, into: piece, at: offset + Int64(start), path: path)
            }
            Parallel.run(Array(repeating: work.run, count: min(Parallel.cores, work.pieces)))
            // Every core has returned: whatever arrived after the last one hashing left it is hashed here.
            work.hashArrived()
            outcome = work.outcome
            if case .complete = outcome { initialized = count } else { initialized = 0 }
        }
        switch outcome {
        case .complete(let digest): return (value, digest)
        case .short: return nil
        case .failed(let error): throw error
        }
    }

    /// How the reading ended.
    enum Outcome {
        case complete(UInt64)
        case short
        case failed(any Error)
    }

    /// One payload's pieces, shared by the cores reading it. Each piece of the buffer is
    /// written by the one core that claimed it, and read (hashed) only after its bit in
    /// `arrived` is set with release ordering; the stream is touched only by the core holding
    /// `hashing`.
    private final class Work: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
        let pieceSize: Int
        let pieces: Int
        private let readPiece: (UnsafeMutableRawBufferPointer, Int) throws -> Int
        private let nextRead = Atomic<Int>(0)
        private let arrived = Atomic<UInt64>(0)
        private let hashedPieces = Atomic<Int>(0)
        private let hashing = Atomic<Bool>(false)
        private let stopped = Atomic<Bool>(false)
        private let stream: RunningChecksum
        private let problem = Locked<Outcome?>(nil)

        /// `read(piece, start)` fills `piece`, the payload's bytes from `start` on, and returns
        /// how many it read (fewer only at the end of the file).
        init(buffer: UnsafeMutableRawBufferPointer, checksum: RunningChecksum,
             read: @escaping (UnsafeMutableRawBufferPointer, Int) throws -> Int) {
            self.buffer = buffer
            let even = (buffer.count + RawPayloadReader.maxPieces - 1) / RawPayloadReader.maxPieces
            pieceSize = max(RawPayloadReader.minimumPiece, (even + 31) & ~31)
            pieces = (buffer.count + pieceSize - 1) / pieceSize
            readPiece = read
            stream = checksum
        }

        /// The digest, or what went wrong (read once every core is done and `hashArrived` ran).
        var outcome: Outcome {
            if let problem = problem.withLock({ $0 }) { return problem }
            guard hashedPieces.load(ordering: .acquiring) == pieces else { return .short }
            let stripes = buffer.count & ~31
            return .complete(stream.finish(tail: UnsafeRawBufferPointer(rebasing: buffer[stripes...])))
        }

        /// A core's share: hash what has arrived when no other core is hashing, else read the
        /// next piece nobody has claimed, else stop: a core never waits for another (the
        /// caller hashes what is left once every core has returned).
        func run() {
            while !stopped.load(ordering: .acquiring) {
                let hashed = hashedPieces.load(ordering: .acquiring)
                if hashed == pieces { return }
                if has(hashed), hashing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
                    hashArrived()
                    hashing.store(false, ordering: .releasing)
                } else if nextRead.load(ordering: .relaxed) < pieces,
                          case let index = nextRead.wrappingAdd(1, ordering: .relaxed).oldValue, index < pieces {
                    fetch(index)
                } else {
                    return
                }
            }
        }

        private func has(_ index: Int) -> Bool {
            index < pieces && arrived.load(ordering: .acquiring) & (1 << UInt64(index)) != 0
        }

        /// Hashes every arrived piece after the last one hashed: by the core holding
        /// `hashing`, or by the caller once every core has returned.
        func hashArrived() {
            var index = hashedPieces.load(ordering: .relaxed)
            let stripes = buffer.count & ~31
            while has(index) {
                let start = min(index * pieceSize, stripes), end = min(start + pieceSize, stripes)
                stream.absorb(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                index += 1
                hashedPieces.store(index, ordering: .releasing)
            }
        }

        private func fetch(_ index: Int) {
            let start = index * pieceSize
            let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[start..<min(start + pieceSize, buffer.count)])
            do {
                guard try readPiece(piece, start) == piece.count else { return stop(.short) }
                arrived.bitwiseOr(1 << UInt64(index), ordering: .releasing)
            } catch {
                stop(.failed(error))
            }
        }

        private func stop(_ outcome: Outcome) {
            problem.withLock { if $0 == nil { $0 = outcome } }
            stopped.store(true, ordering: .releasing)
        }
    }
}
