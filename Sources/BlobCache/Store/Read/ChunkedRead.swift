#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

/// A stored value handed on in checked chunks: a pieced loose blob piece by piece, from a file
/// opened once (a deletion meanwhile does not take it away); any other blob (packed, or loose
/// in a whole-value format) in one chunk, checked whole first.
///
///     var read = try pipeline.openChunks(info, at: location).get()
///     while let chunk = try read.next().get() { try write(chunk) }
final class ChunkedRead {
    private enum Source {
        case whole([UInt8]?)
        case pieces(PiecedBlobReader)
    }

    private var source: Source
    private let close: () -> Void
    /// The value's length.
    let rawLength: Int
    /// The file read (device and inode), for a pieced blob: what damage found part way is
    /// checked against before the blob's entries are dropped.
    let file: FileIdentity?

    private init(_ source: Source, rawLength: Int, file: FileIdentity? = nil, close: @escaping () -> Void) {
        self.source = source
        self.rawLength = rawLength
        self.file = file
        self.close = close
    }

    deinit { close() }

    /// Whether the value was read and checked whole (one chunk, in memory).
    var isWhole: Bool { if case .whole = source { true } else { false } }

    /// The next chunk once checked, `nil` after the last (an empty value has none).
    func next() throws -> Result<[UInt8]?, BlobDamage> {
        switch source {
        case .whole(let value):
            source = .whole(nil)
            return .success(value.flatMap { $0.isEmpty ? nil : $0 })
        case .pieces(var reader):
            let result = try reader.next()
            source = .pieces(reader)
            return result
        }
    }

    /// A value already read and checked.
    static func whole(_ value: [UInt8]) -> ChunkedRead {
        ChunkedRead(.whole(value), rawLength: value.count, close: {})
    }

    /// Reads a pieced blob through `fd`, which it closes when done.
    static func pieces(_ reader: PiecedBlobReader, closing fd: FileDescriptor, io: FileIO) -> ChunkedRead {
        ChunkedRead(.pieces(reader), rawLength: reader.rawLength, file: io.status(fd).map(FileIdentity.init),
                    close: { io.close(fd) })
    }
}

/// A file's identity: its device and inode.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ status: stat) {
        device = UInt64(truncatingIfNeeded: status.st_dev)   // a signed Int32 on Darwin
        inode = UInt64(status.st_ino)
    }
}

extension BlobPipeline {
    /// Opens `info`'s value for a chunked read: a pieced loose blob once its header and
    /// prologue check, any other blob read and checked whole (`read`). `.failure` names the
    /// damage (or that it is missing).
    func openChunks(_ info: BlobInfo, at location: BlobStore.Location?) throws -> Result<ChunkedRead, BlobDamage> {
        guard case .loose(let path) = location, info.rawLength > PiecedBlobFormat.pieceSize else {
            return try read(info, at: location).map(ChunkedRead.whole)
        }
        guard try io.shardDirectoriesAreReal(files.shardDirectories(of: info.id)) else {
            return .failure(.missing("a shard directory above it is a symbolic link"))
        }
        guard let fd = try io.openIfExists(path) else { return .failure(.missing("file is missing")) }
        let head: [UInt8]
        do {
            head = try io.read(fd, count: LooseBlobFormat.headerSize, at: 0, path: path)
        } catch {
            io.close(fd)
            throw error
        }
        guard head.count == LooseBlobFormat.headerSize, head[4] == PiecedBlobFormat.version else {
            // A whole-value format: read whole, as every read of it is.
            io.close(fd)
            return try read(info, at: location).map(ChunkedRead.whole)
        }
        do {
            switch try PiecedBlobReader.open(fd, path: path, io: io, expecting: info, cipher: cipher) {
            case .success(let reader): return .success(.pieces(reader, closing: fd, io: io))
            case .failure(let damage):
                io.close(fd)
                return .failure(damage)
            }
        } catch {
            io.close(fd)
            throw error
        }
    }
}

extension BlobPipeline {
    /// Whether `info`'s blob is a pieced loose blob (format 4), by its file's header.
    func isPieced(_ info: BlobInfo) -> Bool {
        guard case .loose = info.place, info.rawLength > PiecedBlobFormat.pieceSize,
              let fd = try? io.openIfExists(files.loosePath(of: info.id)) else { return false }
        defer { io.close(fd) }
        let head = (try? io.read(fd, count: 5, at: 0, path: files.loosePath(of: info.id))) ?? []
        return head.count == 5 && head[4] == PiecedBlobFormat.version
    }

    /// Writes `info`'s value (read in checked chunks from `location`) again as a pieced blob
    /// through `target` (another codec, another key), a piece at a time; the staged file is the
    /// caller's to publish or discard. `.failure`: the blob is damaged (nothing staged).
    func repiece(_ info: BlobInfo, at location: BlobStore.Location?,
                 into target: BlobPipeline) throws -> Result<(info: BlobInfo, staged: StagedLooseBlob), BlobDamage> {
        let read: ChunkedRead
        switch try openChunks(info, at: location) {
        case .failure(let damage): return .failure(damage)
        case .success(let opened): read = opened
        }
        let writer = try PiecedBlobWriter(pipeline: target)
        do {
            var gathered: [UInt8] = []
            gathered.reserveCapacity(PiecedBlobFormat.pieceSize)
            while true {
                let chunk: [UInt8]?
                switch try read.next() {
                case .failure(let damage):
                    writer.discard()
                    return .failure(damage)
                case .success(let next): chunk = next
                }
                guard let chunk else { break }
                var rest = chunk[...]
                while !rest.isEmpty {
                    let take = min(rest.count, PiecedBlobFormat.pieceSize - gathered.count)
                    gathered += rest.prefix(take)
                    rest = rest.dropFirst(take)
                    if gathered.count == PiecedBlobFormat.pieceSize {
                        try writer.append(gathered)
                        gathered.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !gathered.isEmpty { try writer.append(gathered) }
            return .success(try writer.finish())
        } catch {
            writer.discard()
            throw error
        }
    }
}
