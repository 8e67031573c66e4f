import CZlib
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One open pack segment file. Readers keep a reference while they read, so a segment that
/// garbage collection retires stays open (and mapped, and its descriptor unreused) until the
/// last read ends.
///
/// The file is mapped once, shared and read-only, over `mappedLength` bytes (the segment size
/// limit: more than the file holds while it grows; appended records show through the page
/// cache). A record is read from the mapping only when it lies within the bytes the store
/// knows were written (`writtenEnd`, taken under the cache's lock), so nothing past the end of
/// the file is ever touched; anything else goes through `pread`.
final class PackSegment: Sendable {
    let number: UInt32
    let path: CachePath
    let descriptor: FileDescriptor
    /// Read-only and never remapped, so sharing it across threads is safe.
    nonisolated(unsafe) private let mapping: UnsafeRawBufferPointer?

    private let io: FileIO

    /// Takes `descriptor` over (closed with the segment). Without a mapping (mmap failed)
    /// every read goes through `pread`.
    init(number: UInt32, path: CachePath, descriptor: FileDescriptor, mappedLength: Int, io: FileIO) {
        self.number = number
        self.path = path
        self.descriptor = descriptor
        self.io = io
        let base = mappedLength > 0 ? try? io.system.map(descriptor, length: mappedLength, shared: true, populate: false) : nil
        mapping = base.map { UnsafeRawBufferPointer(start: $0, count: mappedLength) }
    }

    deinit {
        if let mapping { io.system.unmap(UnsafeMutableRawPointer(mutating: mapping.baseAddress!), length: mapping.count) }
        io.close(descriptor)
    }

    /// Starts loading the start of the record at `offset` into the CPU cache, so that a read
    /// looked up under the cache's lock finds the record's header there once it runs. A
    /// software prefetch: it never faults (not even past the file's written end, which the
    /// mapping may cover), never touches anything outside the mapping and changes nothing.
    ///
    ///     segment.prefetchRecord(at: offset)
    func prefetchRecord(at offset: UInt64) {
        guard let mapping, offset < UInt64(mapping.count) else { return }
        blobcache_prefetch_read(mapping.baseAddress! + Int(offset))
    }

    /// Reads and checks the record at `offset`, returning the value's bytes; `writtenEnd` is
    /// how many bytes of the file the store had written when the read began; `cipher` opens
    /// sealed records.
    func readValue(at offset: UInt64, expecting info: BlobInfo, writtenEnd: Int64, cipher: CacheCipher?,
                   checking check: PayloadCheck) throws -> Result<[UInt8], BlobDamage> {
        let length = PackFormat.recordHeaderSize + info.payloadLength
        // Lengths and offsets come from the journal (each checked to be below 2^48), so these
        // sums cannot overflow; a record that would end past the written bytes is not read.
        guard Int64(offset) + Int64(length) <= writtenEnd else {
            return .failure(.truncated("record at \(offset) of \(length) bytes ends past the segment's \(writtenEnd) bytes"))
        }
        if let mapping, Int64(offset) + Int64(length) <= Int64(mapping.count) {
            // No system call and no copy: checked and decoded from the page cache.
            return PackFormat.decode(record: UnsafeRawBufferPointer(rebasing: mapping[Int(offset)..<Int(offset) + length]),
                                     expecting: info, cipher: cipher, checking: check)
        }
        let record = try io.read(descriptor, count: length, at: Int64(offset), path: path)
        return record.withUnsafeBytes { PackFormat.decode(record: $0, expecting: info, cipher: cipher, checking: check) }
    }
}
