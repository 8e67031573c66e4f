import SystemPackage

/// One open pack segment file. Readers keep a reference while they `pread`, so a segment that
/// garbage collection retires stays open (and its descriptor unreused) until the last read ends.
final class PackSegment: Sendable {
    let number: UInt32
    let path: FilePath
    let descriptor: FileDescriptor

    init(number: UInt32, path: FilePath, descriptor: FileDescriptor) {
        self.number = number
        self.path = path
        self.descriptor = descriptor
    }

    deinit { try? descriptor.close() }

    /// Reads and checks the record at `offset`, returning the value's bytes.
    func readValue(at offset: UInt64, expecting info: BlobInfo) throws -> Result<[UInt8], BlobDamage> {
        let record = try FileIO.read(descriptor, count: PackFormat.recordHeaderSize + info.payloadLength,
                                     at: Int64(offset), path: path)
        return record.withUnsafeBytes { PackFormat.decode(record: $0, expecting: info) }
    }
}
