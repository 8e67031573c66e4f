/// Bytes a read decodes, and whether it may write over them. A read of a loose blob holds its
/// own copy of the file, which opening a seal overwrites with the plaintext, so a large
/// encrypted value needs no second buffer of its size (allocating and faulting in one per get
/// cost a 1 MiB read as much again, the allocator having returned the last one to the system);
/// a read of a pack record only borrows them (from the segment's mapping, or a small copy).
///
///     file.withUnsafeMutableBytes { LooseBlobFormat.decode(file: .owned($0), expecting: info, cipher: cipher) }
enum ReadBuffer {
    /// Bytes the read may only look at (a mapping, a caller's buffer).
    case borrowed(UnsafeRawBufferPointer)
    /// The read's own copy, which it may overwrite; what is in it afterwards is unspecified.
    case owned(UnsafeMutableRawBufferPointer)

    /// The bytes, to read.
    var bytes: UnsafeRawBufferPointer {
        switch self {
        case .borrowed(let bytes): bytes
        case .owned(let bytes): UnsafeRawBufferPointer(bytes)
        }
    }

    /// The bytes from `start` on, owned or borrowed as these are.
    func suffix(from start: Int) -> ReadBuffer {
        switch self {
        case .borrowed(let bytes): .borrowed(UnsafeRawBufferPointer(rebasing: bytes[start...]))
        case .owned(let bytes): .owned(UnsafeMutableRawBufferPointer(rebasing: bytes[start...]))
        }
    }
}
