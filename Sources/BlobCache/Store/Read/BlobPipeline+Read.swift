import SystemPackage

extension BlobPipeline {
    /// Reads and checks a blob as `check` says (a read trusts a sealed blob's tag; repair
    /// checks everything fsck does); `.failure` says how it is damaged (or missing).
    func read(_ info: BlobInfo, at location: BlobStore.Location?,
              checking check: PayloadCheck = .tagWhenSealed) throws -> Result<[UInt8], BlobDamage> {
        switch location {
        case nil:
            return .failure(.missing("its pack segment is gone"))
        case .loose(let path):
            guard try io.shardDirectoriesAreReal(files.shardDirectories(of: info.id)) else {
                return .failure(.missing("a shard directory above it is a symbolic link"))
            }
            guard let fd = try io.openIfExists(path) else { return .failure(.missing("file is missing")) }
            defer { io.close(fd) }
            let size = try io.fileSize(fd, path: path)
            guard size <= LooseBlobFormat.largestFile(holding: info) else {
                return .failure(.sizeMismatch("file is larger than a blob of \(info.rawLength) bytes can be"))
            }
            // A large value stored raw goes straight into the value, checked as it arrives. (Only
            // tried when the index says raw: a compressed blob would pay a header read for nothing;
            // one recompressed since the index heard of it is read whole, and checked all the same.)
            if cipher == nil, info.codec == .none, size >= Int64(LooseBlobFormat.headerSize + Parallel.threshold),
               let checked = try LooseBlobFormat.readRaw(fd, fileSize: size, expecting: info, io: io, path: path) {
                return checked
            }
            // The file's copy is this read's own: a seal is opened in place, with no second buffer.
            var file = try io.read(fd, count: Int(size), at: 0, path: path)
            return file.withUnsafeMutableBytes {
                LooseBlobFormat.decode(file: .owned($0), expecting: info, cipher: cipher, checking: check)
            }
        case .packed(let segment, let offset, let writtenEnd):
            return try segment.readValue(at: offset, expecting: info, writtenEnd: writtenEnd, cipher: cipher, checking: check)
        }
    }
}
