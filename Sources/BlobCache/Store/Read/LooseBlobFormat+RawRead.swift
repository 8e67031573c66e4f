import SystemPackage

extension LooseBlobFormat {
    /// Reads a loose blob stored raw (format 2 or 3) straight into its value, checking its XXH64 or XXH3 as
    /// the pieces arrive (`RawPayloadReader`), instead of reading the file, then copying the
    /// payload out of it and hashing it. `nil` when the file is not such a blob or its header
    /// does not agree with `info` and its own size: `decode(file:expecting:)` then reads it
    /// whole and names the damage.
    ///
    ///     if let checked = try LooseBlobFormat.readRaw(fd, fileSize: size, expecting: info, io: io, path: path) { … }
    static func readRaw(_ fd: FileDescriptor, fileSize: Int64, expecting info: BlobInfo,
                        io: FileIO, path: CachePath) throws -> Result<[UInt8], BlobDamage>? {
        let head = try io.read(fd, count: headerSize, at: 0, path: path)
        guard case .success(let header) = head.withUnsafeBytes(parseHeader), header.codec == .none, !header.sealed,
              let (expected, mismatch) = header.checksum.digest, header.rawLength == info.rawLength,
              header.payloadLength == header.rawLength, Int64(headerSize + header.payloadLength) == fileSize,
              let running = head.withUnsafeBytes({
                  RunningChecksum(for: header.checksum, head: UnsafeRawBufferPointer(rebasing: $0[..<checkedHeaderSize]))
              })
        else { return nil }
        guard let (value, digest) = try RawPayloadReader.read(fd, count: header.payloadLength, at: Int64(headerSize),
                                                              checksum: running, io: io, path: path) else {
            return .failure(.truncated("file ended before its \(header.payloadLength) bytes of payload"))
        }
        return digest == expected ? .success(value) : .failure(.checksum(mismatch))
    }
}
