/// Walks the records of a pack segment image in order, until the end or the first record
/// whose header cannot be parsed (after which no record boundary can be trusted).
enum PackScanner {
    /// Each record is decoded (opened under `cipher` when sealed) and handed to `visit`.
    static func scan(_ image: UnsafeRawBufferPointer, cipher: CacheCipher?,
                     _ visit: (_ offset: Int, _ header: PackFormat.RecordHeader, _ result: Result<[UInt8], BlobDamage>) -> Void)
        -> (end: Int, problem: BlobDamage?) {
        var offset = PackFormat.segmentHeaderSize
        while offset < image.count {
            let rest = UnsafeRawBufferPointer(rebasing: image[offset...])
            guard case .success(let header) = PackFormat.parseRecordHeader(rest) else {
                return (offset, PackFormat.parseRecordHeader(rest).failureValue)
            }
            let length = PackFormat.recordHeaderSize + header.payloadLength
            guard length <= rest.count else {
                return (offset, .truncated("record at \(offset) needs \(length) bytes, \(rest.count) remain"))
            }
            visit(offset, header, PackFormat.decode(record: UnsafeRawBufferPointer(rebasing: rest[0..<length]), expecting: nil,
                                                                   cipher: cipher))
            offset += length
        }
        return (offset, nil)
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
