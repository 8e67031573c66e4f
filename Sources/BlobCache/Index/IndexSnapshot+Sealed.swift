import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The snapshot of an encrypted cache: the same image, sealed whole with the cache's key, so
// that it is read and opened into memory rather than mapped in place.
extension IndexSnapshot {
    /// The magic of a sealed snapshot: `BCIS`, a 4-byte version (1), then the image sealed
    /// as `nonce ‖ ciphertext ‖ tag` (docs/FORMAT.md, "Encryption").
    static let sealedMagic: [UInt8] = Array("BCIS".utf8)
    static let sealedHeaderSize = 8

    /// The file an encrypted cache writes for `image`.
    static func seal(_ image: [UInt8], cipher: CacheCipher) -> [UInt8] {
        var writer = BinaryWriter(capacity: sealedHeaderSize + image.count + CacheCipher.overhead)
        writer.append(bytes: sealedMagic)
        writer.append(UInt32(1))
        writer.append(bytes: image.withUnsafeBytes { cipher.seal($0, context: .snapshot) })
        return writer.bytes
    }

    /// Reads a sealed snapshot, opens it and checks its header as `map` does. It is read (not
    /// mapped: it must be opened whole) only when its bytes are real and few enough: no larger
    /// than 4 bytes per journal byte (every record takes at least 37 bytes sealed, and an
    /// entry, its blob, key and table slots at most 144 plus the key) and not sparse, so a
    /// file that merely claims a size allocates nothing.
    static func mapSealed(_ path: CachePath, io: FileIO, journalSize: Int64,
                          cipher: CacheCipher) throws -> Result<(file: MappedFile, header: Header), BlobDamage>? {
        let (scaled, overflow) = journalSize.multipliedReportingOverflow(by: 4)
        let limit = overflow ? Int64.max : scaled.addingReportingOverflow(Int64(6 * page + sealedHeaderSize + CacheCipher.overhead)).partialValue
        guard let fd = try io.openIfExists(path) else { return nil }
        defer { io.close(fd) }
        guard let info = try? io.system.status(fd), info.st_mode & S_IFMT == S_IFREG else {
            return .failure(.header("not a regular file"))
        }
        let size = Int64(info.st_size)
        guard size >= 0, size <= limit, size <= Int64(info.st_blocks) * 512 else {
            return .failure(.sizeMismatch("sealed snapshot larger than its journal allows, or sparse"))
        }
        let bytes = try io.read(fd, count: Int(size), at: 0, path: path)
        guard bytes.count >= sealedHeaderSize, bytes[0..<4].elementsEqual(sealedMagic),
              bytes[4..<8].elementsEqual([1, 0, 0, 0]) else { return .failure(.header("not a sealed snapshot")) }
        let opened = bytes.withUnsafeBytes { sealed in
            cipher.open(UnsafeRawBufferPointer(rebasing: sealed[sealedHeaderSize...]), context: .snapshot) { image -> Result<(file: MappedFile, header: Header), BlobDamage> in
                switch parseHeader(image) {
                case .failure(let damage): return .failure(damage)
                case .success(let header):
                    guard header.journalLength <= journalSize else {
                        return .failure(.sizeMismatch("reflects \(header.journalLength) bytes of journal, which has \(journalSize)"))
                    }
                    guard let file = MappedFile(copying: image, io: io) else { return .failure(.truncated("snapshot is empty")) }
                    return .success((file, header))
                }
            }
        }
        return opened ?? .failure(.sealing("snapshot does not open (AES-GCM tag)"))
    }
}
